"""What a driver last programmed, for regions the host cannot read back.

Reading the loaded bitstream's id from sysfs is preferred, but the host
loses sight of it once the function is handed over: an Intel port assigned
to a VF bound to vfio-pci, an Alveo user function passed through to a VM.
The driver then reports the id it recorded after the last successful
programming, kept in ``<[DEFAULT] state_path>/<driver>/programmed.json``.
"""

import json
import os
import threading


class ProgrammedRecords:
    def __init__(self, state_path, driver):
        self.path = os.path.join(state_path, driver, 'programmed.json')
        self._lock = threading.Lock()

    def get(self, address, region):
        return self._load().get(self._key(address, region))

    def put(self, address, region, bitstream_id):
        with self._lock:
            records = self._load()
            records[self._key(address, region)] = bitstream_id
            self._save(records)

    @staticmethod
    def _key(address, region):
        return '%s/%s' % (address, region)

    def _load(self):
        try:
            with open(self.path) as f:
                return json.load(f)
        except FileNotFoundError:
            return {}

    def _save(self, records):
        # Written aside and renamed, so a crash never leaves half a file.
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        temporary = self.path + '.tmp'
        with open(temporary, 'w') as f:
            json.dump(records, f, indent=1, sort_keys=True)
        os.replace(temporary, self.path)
