"""Personas shared by every rule: the OpenStack secure-RBAC defaults.

A cloud admin has the ``admin`` role; a project's ``manager``, ``member``
and ``reader`` act within their own project; Nova calls with the
``service`` role, either in its own token or, on a user's behalf, in the
service token it sends beside the user's (``X-Service-Token``: auth_token
validates it and hands its roles on as ``service_roles``). These are
Cyborg's rule names, so existing policy files keep working.

Role checks (``role:``) ignore case, so ``Admin`` is ``admin``. The code
compares no role names: whatever depends on who the caller is asks one of
these rules (``context_is_admin``, ``all_projects_api``) at the API.
"""

from oslo_policy import policy

ADMIN = 'rule:admin_api'
SERVICE = 'rule:service_api'
SERVICE_OR_ADMIN = 'rule:service_or_admin'
PROJECT_READER_OR_ADMIN = 'rule:project_reader_or_admin'
PROJECT_MEMBER_OR_ADMIN = 'rule:project_member_or_admin'
PROJECT_MANAGER_OR_ADMIN = 'rule:project_manager_or_admin'
PROJECT_MEMBER_OR_SERVICE = 'rule:project_member_or_service'
PROJECT_READER_OR_SERVICE = 'rule:project_reader_or_service'

rules = [
    policy.RuleDefault('admin_api', 'role:admin',
                       'A cloud administrator.'),
    policy.RuleDefault(
        'context_is_admin', 'rule:admin_api',
        'Who the request context marks as an administrator (is_admin). '
        'Kept in step with admin_api: nothing else decides it.'),
    policy.RuleDefault(
        'service_api', 'role:service or service_roles:service',
        'Another OpenStack service (Nova): a token with the service role, '
        'or a user token accompanied by a valid service token '
        '(X-Service-Token) with the service role. auth_token removes any '
        'X-Service-Roles header a client sends, so only a service token '
        'Keystone validated can satisfy service_roles. Note: unlike role: '
        'checks, the service_roles check is case sensitive.'),
    policy.RuleDefault('service_or_admin',
                       'rule:service_api or rule:admin_api',
                       'Nova, or cloud admin.'),
    policy.RuleDefault(
        'all_projects_api', 'rule:service_or_admin',
        "Sees and acts on every project's accelerator requests and "
        'programming operations; everyone else only on those of the '
        "project of their token. Evaluated once per request at the API; "
        'the conductor only reads the outcome from the request context.'),
    policy.RuleDefault('project_manager_api',
                       'role:manager and project_id:%(project_id)s',
                       'A manager of the project that owns the target.'),
    policy.RuleDefault('project_member_api',
                       'role:member and project_id:%(project_id)s',
                       'A member of the project that owns the target.'),
    policy.RuleDefault('project_reader_api',
                       'role:reader and project_id:%(project_id)s',
                       'A reader of the project that owns the target.'),
    policy.RuleDefault('project_reader_or_admin',
                       'rule:project_reader_api or rule:admin_api',
                       'Project reader, or cloud admin.'),
    policy.RuleDefault('project_member_or_admin',
                       'rule:project_member_api or rule:admin_api',
                       'Project member, or cloud admin.'),
    policy.RuleDefault('project_manager_or_admin',
                       'rule:project_manager_api or rule:admin_api',
                       'Project manager, or cloud admin.'),
    policy.RuleDefault('project_member_or_service',
                       'rule:project_member_api or rule:service_api or '
                       'rule:admin_api',
                       'Project member, Nova, or cloud admin.'),
    policy.RuleDefault('project_reader_or_service',
                       'rule:project_reader_api or rule:service_api or '
                       'rule:admin_api',
                       'Project reader, Nova, or cloud admin.'),
]


def operation(name, check_str, description, method, path):
    """A documented rule for one API operation, project scoped."""
    return policy.DocumentedRuleDefault(
        name=name, check_str=check_str, description=description,
        operations=[{'method': method, 'path': path}],
        scope_types=['project'])


# Why the inventory differs from Cyborg, said once for every such rule.
CLOUD_INVENTORY = (
    ' Default: cloud admin only. Cyborg (2026.1) lets any project manager '
    '(project_manager_or_admin) read it, and earlier releases admin only; '
    'but devices, deployables, attributes, hosts and health are the '
    "cloud's hardware, not a project's: a manager of any project would "
    'see every host and device of the cloud. The rule is checked against '
    'a target without a project, so a project-scoped rule written here '
    'never passes. For Cyborg\'s behaviour on devices, deployables and '
    'attributes (Cyborg has no hosts), use the shipped '
    'policy-cyborg-compatible.yaml (role:manager or rule:admin_api); '
    'docs/compatibility.md lists every difference from Cyborg.')
