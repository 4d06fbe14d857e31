"""One family's rows as the read model holds them, answering a list or a
show exactly as the conductor's query would, or not at all.

Rows are kept in the database's default list order (created_at, id).
What the database would answer by its collation (MariaDB/MySQL compare
strings ignoring case and trailing spaces) is answered here only for
values plain enough that every collation agrees; anything else raises
``Unanswerable`` and the caller asks the conductor.
"""


class Unanswerable(Exception):
    """The copy cannot answer this query exactly as the database would."""


class Family:
    """One family's rows at one generation, in the database's default list
    order (created_at, id)."""

    def __init__(self, generation, rows, dialect):
        self.generation = generation
        self.rows = rows
        self.by_uuid = {row['uuid']: index for index, row in enumerate(rows)}
        # MariaDB/MySQL compare strings by a collation, usually ignoring
        # case and trailing spaces: only values plain enough that every
        # collation agrees are compared here.
        self._collated = dialect == 'mysql'

    def get(self, uuid):
        index = self.by_uuid.get(uuid)
        return None if index is None else self.rows[index]

    def find(self, key, value):
        """The one row whose ``key`` is exactly ``value`` (a unique
        column), or None."""
        for row in self.rows:
            if row[key] == value:
                return row
        return None

    def equal(self, stored, wanted):
        if stored is None:
            return False        # NULL = x is never true
        if not self._collated:
            return stored == wanted
        if not (_plain(stored) and _plain(wanted)):
            raise Unanswerable()
        same = stored.lower() == wanted.lower()
        if same and stored != wanted:
            raise Unanswerable()   # depends on the column's collation
        return same

    def page(self, match, limit, marker, sort_key, sort_dir):
        """As db/api.py paginate: rows after the marker (looked up among
        all rows) in (sort_key, id) order, that ``match``, at most
        ``limit``."""
        if sort_key != 'created_at':
            raise Unanswerable()
        # Positions, not slices: a page costs the rows it looks at, not a
        # copy of the family.
        if marker is None:
            start = 0 if sort_dir == 'asc' else len(self.rows) - 1
        else:
            start = self.by_uuid.get(marker)
            if start is None:
                raise Unanswerable()   # the conductor says 400 (or knows)
            start += 1 if sort_dir == 'asc' else -1
        positions = range(start, len(self.rows)) if sort_dir == 'asc' \
            else range(start, -1, -1)
        found = []
        for position in positions:
            row = self.rows[position]
            if match(row):
                found.append(row)
                if len(found) >= limit:
                    break
        return found


def _plain(value):
    return isinstance(value, str) and value.isascii() and \
        not value.endswith(' ')


def matching(filters):
    """Equality on each filter given (not None), as db/devices.py and
    db/deployables.py filter."""
    given = [(k, v) for k, v in filters.items() if v is not None]

    def match(family, row):
        return all(family.equal(row[k], v) for k, v in given)
    return match
