#!/usr/bin/env python3
"""Print the tests a JUnit XML report records as failed or in error.

.ci/run prints these after its summary, so the last lines of a CI log name
what failed even when threads of the tested services log after pytest's
own summary.
"""

import sys
import xml.etree.ElementTree as ET


def failed(path):
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        yield '(no report at %s: %s)' % (path, exc)
        return
    for case in root.iter('testcase'):
        for kind in ('failure', 'error'):
            found = case.find(kind)
            if found is not None:
                message = (found.get('message') or '').splitlines()
                yield '%s %s::%s %s' % (
                    kind.upper(), case.get('classname'), case.get('name'),
                    message[0][:200] if message else '')


def main(paths):
    for path in paths:
        for line in failed(path):
            print(line)


if __name__ == '__main__':
    main(sys.argv[1:])
