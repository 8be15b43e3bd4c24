#!/usr/bin/env python3
"""Interop suite driver: the real waldur-site-agent (SLURM plugin) and slurmplan on one real
slurmdbd, through tests/interop/fake_waldur.py.

For each variant (default_account_policy `common` with and without `default_partition`,
`individual`, `none`, and `qos_management.skip_qos_swap`) on its own cluster and prefixes it
plays a generated site through the agent's own code: creation (the order processor's
`_create_resource` with the team it fetches), membership changes, a project move, pause,
downscale, restore and a termination (the agent's `delete_resource`), each followed by the
agent's membership sync cycle (`OfferingMembershipProcessor.process_offering`, plus
`sync_all_resource_projects` for the move). After each step it exports the fake's API objects
over HTTP, runs `slurmplan waldur build` and `slurmplan plan`, and checks:

1. the plan holds only documented divergences (`expected` below; docs/waldur.md says why);
2. after `slurmplan apply`, the agent's next cycle runs no sacctmgr write (but the one it makes
   every cycle whatever the state, see `unconditional`);
3. after that apply, the agent's own pause/downscale/restore still take effect in Slurm.

sacctmgr is the real one (the agent runs it through a logging wrapper to count its writes).
Usage: driver.py SLURMPLAN_BINARY WORKDIR [VARIANT ...]. Exits non-zero on the first failure.

Must not: run anything through a shell; touch clusters other than the `w*` one it registers per variant and run.
"""

import hashlib
import json
import logging
import os
import random
import re
import subprocess
import sys
import time
import urllib.request

from fake_waldur import FakeWaldur

SACCTMGR = os.environ.get("SLURMPLAN_SACCTMGR", "/usr/bin/sacctmgr")
VARIANTS = {
    "common": {"default_account_policy": "common"},
    "common-partition": {"default_account_policy": "common", "default_partition": "debug"},
    "individual": {"default_account_policy": "individual"},
    "none": {"default_account_policy": "none"},
    "skip-swap": {"default_account_policy": "common", "qos_management": {"skip_qos_swap": True}},
    # `common`, with slurmplan converging by `reconcile` cycles (desired state built from the
    # (fake) Waldur API on each cycle, the default policy) instead of `apply -d`.
    "reconcile": {"default_account_policy": "common"},
}
# Plan lines that are documented divergences (docs/waldur.md, "Beside the site agent"), given a
# variant's settings: the regular expression and the reason printed beside each line.
def expected(st):
    d, pp, cp = re.escape(st["default_account"]), re.escape(st["project_prefix"]), re.escape(st["customer_prefix"])
    return [
        (
            re.compile(rf"^delete user where name=\S+ account={d} cluster=\S+( partition=\S*)?$"),
            "the agent left the user's default-account association",
        ),
        (
            re.compile(rf"^delete account where name=(({pp}|{cp})[^,\s]*,?)+ cluster=\S+$"),
            "the agent left an empty project/customer account after a termination",
        ),
        (
            re.compile(r"^modify user where name=\S+ cluster=\S+ set defaultaccount=\S+$"),
            "the agent's removal left a DefaultAccount dangling",
        ),
    ]

def uid(s):
    return hashlib.md5(s.encode()).hexdigest()


def run(argv, env=None, check=True):
    p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    if check and p.returncode != 0:
        raise SystemExit(f"failed ({p.returncode}): {argv}\n{p.stdout}\n{p.stderr}")
    return p


def sacctmgr(*args):
    return run(["timeout", "60", SACCTMGR, "-i", *args], check=False)


def show(*args):
    return run(["timeout", "60", SACCTMGR, "-n", "-P", *args]).stdout


class Site:
    """A generated Waldur site held in the fake, in the API's shapes."""

    API = "https://waldur.example.org/api"

    def __init__(self, fake, v):
        self.fake, self.v = fake, v
        self.customers = {f"cust{i}": f"Customer {i}" for i in range(2)}
        self.projects = {"proj0": "cust0", "proj1": "cust0", "proj2": "cust1"}
        self.users = [f"{v}u{i}" for i in range(8)]
        for u in self.users + [f"{v}ghost"]:
            self.fake.offering_users.append(
                {
                    "url": f"{self.API}/marketplace-offering-users/{uid('ou' + u)}/",
                    "uuid": uid("ou" + u),
                    "user_uuid": uid("user" + u),
                    "user_username": u + "@example.org",
                    "username": u,
                    "state": "Deleted" if u.endswith("ghost") else "OK",
                    "offering_uuid": self.fake.offering_uuid,
                    "is_restricted": False,
                }
            )
        self.set_team("proj0", self.users[0:3] + [f"{v}ghost"])
        self.set_team("proj1", self.users[2:5])
        self.set_team("proj2", self.users[5:8])

    def member(self, u):
        state = next(o["state"] for o in self.fake.offering_users if o["username"] == u)
        return {
            "url": f"{self.API}/users/{uid('user' + u)}/",
            "uuid": uid("user" + u),
            "username": u + "@example.org",
            "full_name": u.title(),
            "role": "PROJECT.MEMBER",
            "expiration_time": None,
            "email": u + "@example.org",
            "offering_user_username": u,
            "offering_user_state": state,
        }

    def set_team(self, project, users):
        self.fake.teams[uid(self.v + project)] = [self.member(u) for u in users]

    def add_resource(self, slug, project, limits):
        cust = self.projects[project]
        u = uid(self.v + slug)
        self.fake.resources[u] = {
            "url": f"{self.API}/marketplace-provider-resources/{u}/",
            "uuid": u,
            "name": slug.title(),
            "slug": slug,
            "backend_id": "",
            "state": "Creating",
            "resource_type": "SLURM.Allocation",
            "offering_uuid": self.fake.offering_uuid,
            "project_uuid": uid(self.v + project),
            "project_slug": f"{self.v}-{project}",
            "project_name": project.title(),
            "customer_uuid": uid(self.v + cust),
            "customer_slug": f"{self.v}-{cust}",
            "customer_name": self.customers[cust],
            "restrict_member_access": False,
            "paused": False,
            "downscaled": False,
            "limits": limits,
            "attributes": {},
            "offering_plugin_options": {},
            "end_date": "2027-12-31",
            "created": "2026-12-01T00:00:00Z",
        }
        return u

    def move_project(self, project, cust):
        self.projects[project] = cust
        for r in self.fake.resources.values():
            if r["project_uuid"] == uid(self.v + project):
                r["customer_uuid"] = uid(self.v + cust)
                r["customer_slug"] = f"{self.v}-{cust}"
                r["customer_name"] = self.customers[cust]


class Variant:
    def __init__(self, name, slurmplan, work):
        self.name, self.slurmplan = name, slurmplan
        # Names unique to this run: account records are global and outlive a cluster.
        self.v = "w" + {
            "common": "co",
            "common-partition": "cp",
            "individual": "in",
            "none": "no",
            "skip-swap": "sk",
            "reconcile": "re",
        }[name] + "".join(random.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(4))
        self.reconciling = name == "reconcile"
        self.cluster = self.v
        self.work = os.path.join(work, name)
        os.makedirs(self.work, exist_ok=True)
        self.log = os.path.join(self.work, "sacctmgr.log")
        self.fake = FakeWaldur(uid(self.v + "offering"), uid(self.v + "provider")).start()
        self.site = Site(self.fake, self.v)
        self.settings = {
            "default_account": f"{self.v}_default",
            "root_account": f"{self.v}_root",
            "customer_prefix": f"{self.v}c_",
            "project_prefix": f"{self.v}p_",
            "allocation_prefix": f"{self.v}a_",
            "cluster_name": self.cluster,
            "slurm_bin_path": self.wrapper(),
            "enable_user_homedir_account_creation": False,
            **VARIANTS[name],
        }
        if not self.settings.get("qos_management", {}).get("skip_qos_swap"):
            self.settings.update(qos_default="normal", qos_paused="paused", qos_downscaled="downscaled")
        self.offering_dict = {
            "name": f"Interop {name}",
            "waldur_api_url": self.fake.url + "api/",
            "waldur_api_token": "interop-token-not-secret",
            "waldur_offering_uuid": self.fake.offering_uuid,
            "backend_type": "slurm",
            "order_processing_backend": "slurm",
            "membership_sync_backend": "slurm",
            "backend_settings": self.settings,
            "backend_components": {
                "cpu": {"measured_unit": "k-Hours", "accounting_type": "limit", "label": "CPU", "unit_factor": 60000},
                "mem": {"measured_unit": "gb-Hours", "accounting_type": "limit", "label": "RAM", "unit_factor": 61440},
            },
        }
        self.config = os.path.join(self.work, "waldur-site-agent-config.yaml")
        with open(self.config, "w") as f:
            json.dump({"offerings": [self.offering_dict]}, f, indent=1)  # JSON is YAML
        self.step = 0
        self.extra = []  # divergences a step expects beyond the documented ones

    def wrapper(self):
        """A sacctmgr that logs its argv (one JSON list a line) and runs the real one."""
        d = os.path.join(self.work, "bin")
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "sacctmgr")
        with open(path, "w") as f:
            f.write(
                "#!/usr/bin/env python3\nimport json, os, sys\n"
                f"with open({self.log!r}, 'a') as f:\n    f.write(json.dumps(sys.argv[1:]) + '\\n')\n"
                f"os.execv({SACCTMGR!r}, [{SACCTMGR!r}] + sys.argv[1:])\n"
            )
        os.chmod(path, 0o755)
        # The bed has no slurmctld, hence no jobs: the agent's job cancelling before a
        # termination has nothing to cancel, and a real scancel would fail to reach a controller.
        scancel = os.path.join(d, "scancel")
        with open(scancel, "w") as f:
            f.write("#!/bin/sh\nexit 0\n")
        os.chmod(scancel, 0o755)
        sacct = os.path.join(d, "sacct")
        if not os.path.exists(sacct):
            os.symlink(os.path.join(os.path.dirname(SACCTMGR), "sacct"), sacct)
        return d

    # The agent.
    def processors(self):
        from waldur_api_client.models.provider_offering_details import ProviderOfferingDetails
        from waldur_api_client.models.service_provider import ServiceProvider
        from waldur_api_client.models.user_me import UserMe
        from waldur_site_agent.common import processors, structures, utils

        offering = structures.Offering(**self.offering_dict)
        client = utils.get_client_for_offering(offering)
        common = dict(
            waldur_offering=ProviderOfferingDetails.from_dict(self.fake.offering()),
            service_provider=ServiceProvider.from_dict({"uuid": uid(self.v + "sp")}),
            current_user=UserMe.from_dict({"username": "agent", "is_staff": False}),
        )
        orders = processors.OfferingOrderProcessor(offering, client, **common)
        members = processors.OfferingMembershipProcessor.__new__(processors.OfferingMembershipProcessor)
        processors.OfferingBaseProcessor.__init__(members, offering, client, **common)
        members._team_cache, members._source_project_cache = {}, {}
        return orders, members

    def writes(self):
        """The sacctmgr writes logged since the last call."""
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            lines = [json.loads(line) for line in f]
        os.remove(self.log)
        verbs = {"add", "create", "modify", "update", "remove", "delete"}
        return [a for a in lines if any(w.lower() in verbs for w in a[:4])]

    def agent_cycle(self, move=False):
        from waldur_api_client.models.resource import Resource
        from waldur_site_agent.backend.exceptions import BackendError

        orders, members = self.processors()
        for r in list(self.fake.resources.values()):
            if r["state"] == "Creating":
                # What the agent does for a create order: create, then its post-processing.
                ctx = orders._fetch_user_context_for_resource(r["uuid"])
                orders._create_resource(Resource.from_dict(r), ctx)
                r["state"] = "OK"
                ctx = orders._fetch_user_context_for_resource(r["uuid"])
                orders._add_users_to_resource(Resource.from_dict(r), ctx)
            elif r["state"] == "Terminating":
                # A failed termination fails the order and leaves the resource Erred (live).
                try:
                    orders.resource_backend.delete_resource(Resource.from_dict(r))
                    r["state"] = "Terminated"
                except BackendError as e:
                    r["state"] = "Erred"
                    msg = " ".join(str(e).split())
                    print(f"    the agent's termination of {r['backend_id']} failed; resource Erred: {msg}", flush=True)
        if move:
            members.sync_all_resource_projects()
        members.process_offering()

    # slurmplan.
    def export(self):
        d = os.path.join(self.work, f"export-{self.step}")
        os.makedirs(d, exist_ok=True)
        base = self.fake.url + "api/"

        def get(path, name):
            with urllib.request.urlopen(base + path, timeout=30) as resp:
                body = resp.read()
            with open(os.path.join(d, name), "wb") as f:
                f.write(body)
            return json.loads(body)

        resources = get(f"marketplace-provider-resources/?offering_uuid={self.fake.offering_uuid}", "resources.json")
        for r in resources:
            get(f"marketplace-provider-resources/{r['uuid']}/team/", f"team-{r['uuid']}.json")
        get(f"marketplace-offering-users/?offering_uuid={self.fake.offering_uuid}", "offering-users.json")
        return d

    def build_and_plan(self):
        self.step += 1
        desired = os.path.join(self.work, f"desired-{self.step}.yaml")
        run([self.slurmplan, "waldur", "build", "--config", self.config, "--export", self.export(), "-o", desired])
        p = run([self.slurmplan, "plan", "-d", desired, "--format", "script", "--color", "never"], check=False)
        if p.returncode != 0:
            raise SystemExit(f"{self.name} step {self.step}: plan failed\n{p.stdout}\n{p.stderr}")
        lines = [ln.split("sacctmgr}\" -i ", 1)[1] for ln in p.stdout.splitlines() if "sacctmgr}\" -i " in ln]
        return desired, lines

    def check_plan(self, what):
        desired, lines = self.build_and_plan()
        known = expected(self.settings) + self.extra
        bad = [ln for ln in lines if not any(rx.search(ln) for rx, _ in known)]
        if bad:
            raise SystemExit(f"{self.name}: after {what} the plan holds undocumented divergences:\n" + "\n".join(bad))
        print(f"  {what}: plan after the agent's cycle: {len(lines)} documented divergence(s)", flush=True)
        for ln in lines:
            print(f"    {next(why for rx, why in known if rx.search(ln))}: {ln}", flush=True)
        return desired

    def reconcile(self, what):
        """One `slurmplan reconcile` cycle from the Waldur API (sacctmgr: the logging wrapper,
        from the config's slurm_bin_path); exit 0, or 2 when something waits. Returns the
        pending plan's path when something waits."""
        sd = os.path.join(self.work, "reconcile-state")
        p = run(
            [self.slurmplan, "--agent-config", self.config, "--color", "never", "reconcile", "--state-dir", sd,
             "--metrics", os.path.join(self.work, "reconcile.prom"), "--lock-dir", os.path.join(self.work, "locks"),
             "--detailed-exitcode"],
            check=False,
        )
        if p.returncode not in (0, 2):
            raise SystemExit(f"{self.name}: reconcile after {what} failed ({p.returncode}):\n{p.stderr}")
        if p.stderr.strip():
            print(f"    {p.stderr.strip()}", flush=True)
        pending = os.path.join(sd, "pending", "plan.json")
        if (p.returncode == 2) != os.path.exists(pending):
            raise SystemExit(f"{self.name}: reconcile exit {p.returncode} but pending plan present={os.path.exists(pending)}")
        return pending if p.returncode == 2 else None

    def reconcile_then_no_flip_flop(self, what):
        """A reconcile cycle after the agent's; then agent, reconcile, agent, reconcile cycles
        each write nothing (no flip-flop: neither undoes the other). What the policy holds is
        applied from the pending plan, as a human would, and the next cycles write nothing."""
        self.writes()
        pending = self.reconcile(what)
        self.writes()
        if pending:
            print(f"  {what}: changes wait for review; applying the pending plan as reviewed", flush=True)
            run([self.slurmplan, "apply", pending, "--color", "never"])
            self.writes()
        for who in ["agent", "reconcile", "agent", "reconcile"]:
            if who == "agent":
                self.agent_cycle()
            elif self.reconcile(what):
                raise SystemExit(f"{self.name}: after {what} a reconcile cycle holds changes again")
            self.no_writes(f"after {what}, {who}'s cycle wrote (flip-flop)")
        _, lines = self.build_and_plan()
        if lines:
            raise SystemExit(f"{self.name}: after {what} and reconcile cycles the plan is not empty:\n" + "\n".join(lines))
        print(f"  {what}: reconcile converged; agent and reconcile cycles after it write nothing", flush=True)

    def apply_then_agent_writes_nothing(self, desired, what):
        if self.reconciling:
            return self.reconcile_then_no_flip_flop(what)
        run([self.slurmplan, "apply", "-d", desired, "--auto-approve", "--color", "never"])
        self.writes()
        self.agent_cycle()
        self.no_writes(f"after {what} and slurmplan apply the agent still wrote")
        _, lines = self.build_and_plan()
        if lines:
            raise SystemExit(f"{self.name}: after {what}, apply and an agent cycle the plan is not empty:\n" + "\n".join(lines))
        print(f"  {what}: after apply the agent's cycle writes nothing and the plan is empty", flush=True)

    def no_writes(self, failure):
        """Fail with `failure` if a sacctmgr write was logged since the last call (but the
        agent's unconditional one)."""
        w = [a for a in self.writes() if not self.unconditional(a)]
        if w:
            raise SystemExit(f"{self.name}: {failure}:\n" + "\n".join(map(str, w)))

    def unconditional(self, argv):
        """The one write the agent makes every cycle whatever the state: with skip_qos_swap it
        sets `GrpSubmitJobs=-1` on active allocations and `0` on paused/downscaled ones without
        reading the value first (a no-op when it already holds; the plan afterwards must still
        be empty)."""
        if not self.settings.get("qos_management", {}).get("skip_qos_swap"):
            return False
        want = {
            r["backend_id"]: "GrpSubmitJobs=0" if r["paused"] or r["downscaled"] else "GrpSubmitJobs=-1"
            for r in self.fake.resources.values()
            if r["state"] in ("OK", "Erred")
        }
        tail = [w for w in argv if not w.startswith("--")]
        return (
            len(tail) == 6
            and tail[:2] == ["modify", "account"]
            and tail[2] in want
            and tail[3:] == [f"cluster={self.cluster}", "set", want[tail[2]]]
        )

    def account_levers(self, account):
        out = show("show", "assoc", f"cluster={self.cluster}", f"account={account}", "format=account,user,qos,grpsubmitjobs")
        for line in out.splitlines():
            a, u, qos, gsj = line.split("|")
            if a == account and u == "":
                return qos, gsj
        raise SystemExit(f"{self.name}: no association of {account}")

    def play(self):
        s = self.site
        sacctmgr("add", "cluster", self.cluster)
        sacctmgr("add", "qos", "paused")
        sacctmgr("add", "qos", "downscaled")
        sacctmgr("add", "account", self.settings["default_account"], f"cluster={self.cluster}")
        sacctmgr("add", "account", self.settings["root_account"], f"cluster={self.cluster}")
        r = [
            s.add_resource(f"{self.v}-alpha", "proj0", {"cpu": 10, "mem": 5}),
            s.add_resource(f"{self.v}-beta", "proj0", {"cpu": 20}),
            s.add_resource(f"{self.v}-gamma", "proj1", {"cpu": 30}),
            s.add_resource(f"{self.v}-delta", "proj2", {"cpu": 40}),
        ]
        fr = self.fake.resources
        steps = [
            ("creation", lambda: None, {}),
            ("membership changes", lambda: (s.set_team("proj1", s.users[3:6]), s.set_team("proj0", s.users[0:2] + [f"{self.v}ghost"])), {}),
            ("project move", lambda: s.move_project("proj1", "cust1"), {"move": True}),
            ("pause", lambda: fr[r[0]].update(paused=True), {}),
            ("downscale", lambda: fr[r[1]].update(downscaled=True), {}),
            ("restore", lambda: (fr[r[0]].update(paused=False), fr[r[1]].update(downscaled=False)), {}),
            ("termination", lambda: fr[r[3]].update(state="Terminating"), {}),
        ]
        for what, change, kw in steps:
            change()
            self.agent_cycle(**kw)
            desired = self.check_plan(what)
            self.apply_then_agent_writes_nothing(desired, what)
        if fr[r[3]]["state"] == "Erred":
            # The agent could not terminate it; Waldur's staff then mark it Terminated. The
            # plan removes it, moving the DefaultAccounts that point at it first.
            fr[r[3]]["state"] = "Terminated"
            gone = re.escape(fr[r[3]]["backend_id"])
            self.extra = [
                (re.compile(rf"^delete account where name=\S*{gone}\S* cluster=\S+$"), "the terminated allocation"),
                (re.compile(rf"^delete user where name=\S+ account={gone} cluster=\S+( partition=\S*)?$"), "its users"),
            ]
            self.agent_cycle()
            desired = self.check_plan("termination marked in Waldur")
            self.apply_then_agent_writes_nothing(desired, "termination marked in Waldur")
            self.extra = []
        # The agent's own levers after slurmplan applied.
        alpha = fr[r[0]]["backend_id"]
        skip = bool(self.settings.get("qos_management", {}).get("skip_qos_swap"))
        for what, flags, want in [
            ("pause", {"paused": True}, ("", "0") if skip else ("paused", "")),
            ("downscale", {"paused": False, "downscaled": True}, ("", "0") if skip else ("downscaled", "")),
            ("restore", {"paused": False, "downscaled": False}, ("", "") if skip else ("normal", "")),
        ]:
            fr[r[0]].update(flags)
            self.agent_cycle()
            qos, gsj = self.account_levers(alpha)
            got = (qos if not skip else "", gsj)
            if got != want:
                raise SystemExit(f"{self.name}: the agent's {what} after slurmplan apply did not take effect: {got} != {want}")
            print(f"  the agent's {what} after slurmplan apply takes effect: qos={qos} GrpSubmitJobs={gsj or '-'}", flush=True)
            desired = self.check_plan(f"the agent's {what}")
            self.apply_then_agent_writes_nothing(desired, f"the agent's {what}")
        self.fake.stop()
        if self.fake.unknown:
            raise SystemExit(f"{self.name}: the agent called endpoints the fake does not know: {sorted(set(self.fake.unknown))}")


def main():
    if len(sys.argv) < 3:
        raise SystemExit("usage: driver.py SLURMPLAN WORKDIR [VARIANT ...]")
    os.makedirs(sys.argv[2], exist_ok=True)
    logging.basicConfig(filename=os.path.join(sys.argv[2], "agent.log"), level=logging.INFO)
    names = sys.argv[3:] or list(VARIANTS)
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        raise SystemExit(f"unknown variant(s) {unknown}; known: {list(VARIANTS)}")
    for name in names:
        t = time.time()
        print(f"== {name}", flush=True)
        Variant(name, os.path.abspath(sys.argv[1]), sys.argv[2]).play()
        print(f"== {name}: ok ({time.time() - t:.0f} s)", flush=True)


main()
