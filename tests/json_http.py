"""The base of the tests' HTTP stand-ins (Nova, Neutron, an exporter):
answers with a body and logs nothing."""

import http.server
import json


class QuietHandler(http.server.BaseHTTPRequestHandler):
    def _answer(self, status, document, content_type='application/json'):
        """``document``: None (no body), bytes as they are, else JSON."""
        if document is None:
            data = b''
        elif isinstance(document, bytes):
            data = document
        else:
            data = json.dumps(document).encode()
        self.send_response(status)
        self.send_header('Content-Type', content_type)
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass
