"""An https server on loopback with one OAuth Client ID Metadata Document, for the e2e test
`compat::oauth` (the TypeScript SDK registering by its document): argv is the certificate and
key (PEM) and the document, whose `URL` is replaced by the document's own URL once the port is
known. Prints that URL, then serves `/client.json` until killed."""
import http.server
import ssl
import sys

cert, key, template = sys.argv[1], sys.argv[2], sys.argv[3]
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
url = f"https://127.0.0.1:{server.server_address[1]}/client.json"
document = template.replace("URL", url).encode()


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (the stdlib's name)
        if self.path != "/client.json":
            self.send_response(404)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(document)))
        self.end_headers()
        self.wfile.write(document)

    def log_message(self, *args):
        pass


server.RequestHandlerClass = Handler
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, key)
server.socket = context.wrap_socket(server.socket, server_side=True)
print(url, flush=True)
server.serve_forever()
