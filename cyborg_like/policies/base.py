"""Personas shared by every rule: the OpenStack secure-RBAC defaults.

A cloud admin has the ``admin`` role; a project's ``manager``, ``member``
and ``reader`` act within their own project; Nova calls with the
``service`` role. These are Cyborg's rule names and defaults, so existing
policy files keep working.
"""

from oslo_policy import policy

ADMIN = 'rule:admin_api'
PROJECT_READER_OR_ADMIN = 'rule:project_reader_or_admin'
PROJECT_MEMBER_OR_ADMIN = 'rule:project_member_or_admin'
PROJECT_MANAGER_OR_ADMIN = 'rule:project_manager_or_admin'
PROJECT_MEMBER_OR_SERVICE = 'rule:project_member_or_service'
PROJECT_READER_OR_SERVICE = 'rule:project_reader_or_service'

rules = [
    policy.RuleDefault('admin_api', 'role:admin',
                       'A cloud administrator.'),
    policy.RuleDefault('service_api', 'role:service',
                       'Another OpenStack service (Nova) on its own behalf.'),
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
