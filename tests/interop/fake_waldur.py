"""A fake Waldur for the interop suite: the handful of REST endpoints the site agent's SLURM
membership sync and order handlers call, over real HTTP on 127.0.0.1.

Every object it serves is first parsed with the waldur-api-client model of that endpoint
(`Resource`, `ProjectUser`, `OfferingUser`, `ProviderOfferingDetails`), so a shape the real API
would not produce fails here instead of reaching the agent. The team of a resource is the team
of its project, as in Waldur. Writes the agent makes (backend ids, limits it pushes back, ...)
are recorded in `calls`. An endpoint it does not know is recorded in `unknown` and answered 404;
the suite fails when that list is not empty.

Must not: touch Slurm, read files, or listen anywhere but 127.0.0.1.
"""

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from waldur_api_client.models.offering_user import OfferingUser
from waldur_api_client.models.offering_user_attribute_config import OfferingUserAttributeConfig
from waldur_api_client.models.project_user import ProjectUser
from waldur_api_client.models.provider_offering_details import ProviderOfferingDetails
from waldur_api_client.models.resource import Resource
from waldur_api_client.models.status import Status


def genuine(model, obj):
    """`obj` if the API model reads it, else an exception naming the model."""
    try:
        model.from_dict(obj)
    except Exception as e:  # KeyError/ValueError/TypeError from the generated models
        raise AssertionError(f"not a genuine {model.__name__}: {e!r}: {obj!r}") from e
    return obj


class FakeWaldur:
    def __init__(self, offering_uuid, customer_uuid, api_base="http://127.0.0.1"):
        self.offering_uuid = offering_uuid
        self.customer_uuid = customer_uuid
        self.resources = {}  # uuid -> Resource dict
        self.teams = {}  # project uuid -> [ProjectUser dict]
        self.offering_users = []  # [OfferingUser dict]
        self.calls = []  # (method, path, body)
        self.unknown = []
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"{api_base}:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    # What the endpoints answer.
    def offering(self):
        return genuine(
            ProviderOfferingDetails,
            {
                "uuid": self.offering_uuid,
                "name": "Interop HPC",
                "customer_uuid": self.customer_uuid,
                "components": [],
                "partitions": [],
                "plugin_options": {"username_generation_policy": "waldur_username"},
            },
        )

    def resource_list(self, q):
        states = set(q.get("state", []))
        out = []
        for r in self.resources.values():
            if states and r["state"] not in states:
                continue
            if "project_uuid" in q and r["project_uuid"] not in q["project_uuid"]:
                continue
            out.append(genuine(Resource, r))
        return out

    def team(self, resource_uuid):
        r = self.resources.get(resource_uuid)
        if r is None:
            return None
        return [genuine(ProjectUser, m) for m in self.teams.get(r["project_uuid"], [])]

    def offering_user_list(self, q):
        out = []
        for u in self.offering_users:
            if "user_uuid" in q and u["user_uuid"] not in q["user_uuid"]:
                continue
            out.append(genuine(OfferingUser, u))
        return out

    def _handler(self):
        fake = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, code, obj):
                body = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _route(self, method):
                u = urllib.parse.urlsplit(self.path)
                q = urllib.parse.parse_qs(u.query)
                parts = [p for p in u.path.split("/") if p]
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n) or b"null") if n else None
                with fake.lock:
                    fake.calls.append((method, u.path, body))
                    return fake._answer(method, parts, q, body)

            def do_GET(self):
                self._send(*self._route("GET"))

            def do_POST(self):
                self._send(*self._route("POST"))

        return H

    def _answer(self, method, parts, q, body):
        if parts[:1] != ["api"]:
            return self._unknown(method, parts)
        p = parts[1:]
        if method == "GET" and p == ["marketplace-provider-resources"]:
            return 200, self.resource_list(q)
        if method == "GET" and len(p) == 2 and p[0] == "marketplace-provider-resources":
            r = self.resources.get(p[1])
            return (200, genuine(Resource, r)) if r else (404, {"detail": "Not found."})
        if method == "GET" and len(p) == 3 and p[0] == "marketplace-provider-resources" and p[2] == "team":
            t = self.team(p[1])
            return (200, t) if t is not None else (404, {"detail": "Not found."})
        if method == "POST" and len(p) == 3 and p[0] == "marketplace-provider-resources":
            r = self.resources.get(p[1])
            if r is None:
                return 404, {"detail": "Not found."}
            if p[2] == "set_backend_id":
                r["backend_id"] = body["backend_id"]
            elif p[2] == "set_limits":
                r["limits"] = body["limits"]
            elif p[2] not in ("set_backend_metadata", "refresh_last_sync", "set_as_ok", "set_endpoints"):
                return self._unknown(method, parts)
            return 200, genuine(Status, {"status": "OK"})
        if method == "GET" and p == ["marketplace-offering-users"]:
            return 200, self.offering_user_list(q)
        if method == "GET" and p == ["component-user-usage-limits"]:
            return 200, []
        if method == "GET" and p == ["marketplace-provider-offerings", self.offering_uuid]:
            return 200, self.offering()
        if method == "GET" and p == ["marketplace-provider-offerings", self.offering_uuid, "user-attribute-config"]:
            return 200, genuine(
                OfferingUserAttributeConfig,
                {
                    "uuid": self.offering_uuid,
                    "created": "2026-01-01T00:00:00Z",
                    "modified": "2026-01-01T00:00:00Z",
                    "exposed_fields": ["username", "email"],
                    "is_default": True,
                    "offering_uuid": self.offering_uuid,
                    "offering_name": "Interop HPC",
                },
            )
        if method == "GET" and p[:2] == ["marketplace-provider-offerings", self.offering_uuid] and p[2:] in (
            ["list_course_accounts"],
            ["list_project_service_accounts"],
        ):
            return 200, []  # the site has no service or course accounts
        if method == "GET" and len(p) == 3 and p[0] == "marketplace-service-providers" and p[2] == "keys":
            return 200, []
        return self._unknown(method, parts)

    def _unknown(self, method, parts):
        self.unknown.append(f"{method} /{'/'.join(parts)}/")
        return 404, {"detail": "Not found."}
