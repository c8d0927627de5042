"""A tiny web app with a password-reset flow."""

from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs, urlparse

from mailer import send_password_reset


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        query = parse_qs(urlparse(self.path).query)
        if self.path.startswith("/reset"):
            email = query.get("email", [""])[0]
            send_password_reset(email, f"https://example.com/reset?email={email}")
            self.send_response(202)
        else:
            self.send_response(404)
        self.end_headers()


if __name__ == "__main__":
    HTTPServer(("127.0.0.1", 8000), Handler).serve_forever()
