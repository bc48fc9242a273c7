"""``retrieval-eval serve``'s own login: users and roles from a file of scrypt hashes, or a
trusted proxy header, so labelling does not need Airflow (issue 37, item 5).

Each scenario starts the real command on 127.0.0.1 and talks HTTP to it: the login form, the
session cookie, the roles (a viewer reads, a rater grades as themself), the proxy header
believed only from the proxy's address."""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import yaml
from helpers import served_page

from retrieval_eval.safety.users import (
    User,
    hash_password,
    read_users,
    verify_password,
    write_users,
)
from retrieval_eval.store import open_store
from retrieval_eval.webui.local_auth import (
    FAILURES_PER_ADDRESS,
    FAILURES_PER_NAME,
    WINDOW_S,
    LoginThrottle,
)
from webui.browsing import free_port
from webui.fill import SET

CLI = str(Path(sys.executable).parent / "retrieval-eval")
ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "examples" / "retrieval_eval.yaml"
PASSWORD = "correct horse battery"


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RETRIEVAL_EVAL_")}
    return {**env, "RETRIEVAL_EVAL_HOME": str(home)}


@contextmanager
def serving(tmp_path: Path, db: str, *args: str) -> Iterator[str]:
    port = free_port()
    server = subprocess.Popen(
        [CLI, "serve", "--db", db, "--config", str(CONFIG), "--port", str(port), *args],
        cwd=tmp_path,
        env=_env(tmp_path / "home"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        served_page(server, f"{base}/login")
        yield base
    finally:
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=30)
        assert PASSWORD not in err


def users_file(tmp_path: Path) -> Path:
    path = tmp_path / "users.yaml"
    write_users(path, {
        "ann": User("ann", "rater", hash_password(PASSWORD)),
        "vic": User("vic", "viewer", hash_password(PASSWORD)),
    })  # fmt: skip
    return path


def signed_in(base: str, name: str) -> httpx.Client:
    client = httpx.Client(base_url=base, follow_redirects=False, timeout=30)
    answer = client.post("/login", data={"username": name, "password": PASSWORD, "next": "/"})
    assert answer.status_code == 303 and answer.headers["location"] == "/", answer.text
    cookie = answer.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=lax" in cookie and PASSWORD not in cookie
    return client


def test_users_add_keeps_a_hash_readable_by_its_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "users.yaml"

    def add(name: str, role: str, password: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [CLI, "serve", "--users", str(path), "users", "add", name, "--role", role,
             "--password-stdin"],
            input=password + "\n", env=_env(tmp_path), capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    done = add("ann", "rater", PASSWORD)
    assert done.returncode == 0, done.stderr
    assert f"added ann (rater) in {path}" in done.stderr
    assert PASSWORD not in path.read_text() and PASSWORD not in done.stderr + done.stdout
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    users = read_users(path)
    assert users["ann"].role == "rater"
    assert verify_password(PASSWORD, users["ann"].password_hash or "")
    assert not verify_password("wrong password", users["ann"].password_hash or "")
    again = add("ann", "admin", "another long one")
    assert again.returncode == 0 and "updated ann (admin)" in again.stderr
    assert read_users(path)["ann"].role == "admin"
    short = add("bob", "viewer", "short")
    assert short.returncode == 2 and "8 characters or more" in short.stderr
    assert "bob" not in read_users(path)
    bad = add("bad name!", "viewer", PASSWORD)
    assert bad.returncode == 2 and "user name 'bad name!'" in bad.stderr
    # a hand-edited file with a bad role is refused, naming the file, the user and the field
    document = yaml.safe_load(path.read_text())
    document["users"]["ann"]["role"] = "owner"
    path.write_text(yaml.safe_dump(document))
    broken = add("cy", "viewer", PASSWORD)
    assert broken.returncode == 2 and f"{path}: users.ann.role: 'owner' is no role" in broken.stderr


def test_login_roles_and_a_raters_grade_stored_as_theirs(tmp_path: Path, store_copy: str) -> None:
    with serving(tmp_path, store_copy, "--users", str(users_file(tmp_path))) as base:
        anonymous = httpx.Client(base_url=base, follow_redirects=False, timeout=30)
        page = anonymous.get("/review", params={"set": SET})
        assert page.status_code == 303
        assert page.headers["location"] == f"/login?next=%2Freview%3Fset%3D{SET}"
        assert anonymous.get("/api/overview").status_code == 401
        wrong = anonymous.post("/login", data={"username": "ann", "password": "nope nope"})
        unknown = anonymous.post("/login", data={"username": "zed", "password": PASSWORD})
        assert wrong.status_code == unknown.status_code == 401
        assert "wrong name or password" in wrong.text and "wrong name or password" in unknown.text
        # a forged cookie is no session
        anonymous.cookies.set("retrieval_eval_session", "YW5ufDk5OTk5OTk5OTl8eA.00")
        assert anonymous.get("/api/overview").status_code == 401
        # an open redirect is not followed: next= stays on this site
        hop = signed_in(base, "vic").post(
            "/login", data={"username": "vic", "password": PASSWORD, "next": "//evil.example/"}
        )
        assert hop.headers["location"] == "/"

        viewer = signed_in(base, "vic")
        queue = viewer.get("/review", params={"set": SET})
        assert queue.status_code == 200 and 'id="read-only"' in queue.text
        assert "your role (viewer) may not grade" in queue.text and "vic (viewer)" in queue.text
        first = viewer.get("/api/review", params={"set": SET}).json()["questions"][0]
        form = {"set": SET, "question_id": first["id"],
                "document_id": first["candidates"][0]["document_id"], "grade": "2"}  # fmt: skip
        refused = viewer.post("/review/judge", data={**form, "csrf_token": "0" * 64})
        assert refused.status_code == 403

        rater = signed_in(base, "ann")
        queue = rater.get("/review", params={"set": SET})
        token = re.search(r'name="csrf_token" value="([0-9a-f]{64})"', queue.text)
        assert token is not None
        assert rater.post("/review/judge", data=form).status_code == 403  # no CSRF token
        done = rater.post("/review/judge", data={**form, "csrf_token": token.group(1)})
        assert done.status_code == 303, done.text
        with open_store(store_copy) as store:
            rows = [(s.judgment.rater, s.written_by, s.channel, s.judgment.grade)
                    for s in store.judgments.stored(SET)]  # fmt: skip
        assert rows == [("ann", "ann", "dashboard", 2)]
        out = rater.post("/logout")
        assert out.status_code == 303
        assert rater.get("/api/overview").status_code == 401


def test_a_trusted_header_counts_only_from_the_proxys_address(
    tmp_path: Path, store_copy: str
) -> None:
    users = users_file(tmp_path)
    header = "X-Forwarded-User"
    with serving(
        tmp_path, store_copy, "--users", str(users), "--trusted-user-header", header
    ) as base:
        client = httpx.Client(base_url=base, follow_redirects=False, timeout=30)
        listed = client.get("/", headers={header: "ann"})  # the test is the proxy: 127.0.0.1
        assert listed.status_code == 200 and "ann (rater)" in listed.text
        stranger = client.get("/", headers={header: "someone"})
        assert stranger.status_code == 200 and "someone (viewer)" in stranger.text
    with serving(tmp_path, store_copy, "--trusted-user-header", header,
                 "--trusted-proxy", "10.1.2.3") as base:  # fmt: skip
        client = httpx.Client(base_url=base, follow_redirects=False, timeout=30)
        assert client.get("/api/overview", headers={header: "ann"}).status_code == 401


def test_bad_login_options_are_exit_2(tmp_path: Path, store_copy: str) -> None:
    def serve(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [CLI, "serve", "--db", store_copy, "--port", str(free_port()), *args],
            env=_env(tmp_path / "home"), capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    missing = serve("--users", str(tmp_path / "nobody.yaml"))
    assert missing.returncode == 2 and "no such file" in missing.stderr
    assert "users add NAME --role rater" in missing.stderr
    lonely = serve("--trusted-proxy", "10.0.0.1")
    assert lonely.returncode == 2 and "--trusted-proxy needs --trusted-user-header" in lonely.stderr
    bad = serve("--trusted-user-header", "X-User", "--trusted-proxy", "proxy.example")
    assert bad.returncode == 2 and "not an address or network" in bad.stderr


def test_failed_sign_ins_are_throttled_per_name_and_per_address(
    tmp_path: Path, store_copy: str
) -> None:
    """After FAILURES_PER_NAME failures of a name the next try is 429 with Retry-After, a known
    name and an unknown one alike, the right password included; another name still gets its
    answer until the address has FAILURES_PER_ADDRESS failures."""
    with serving(tmp_path, store_copy, "--users", str(users_file(tmp_path))) as base:
        client = httpx.Client(base_url=base, follow_redirects=False, timeout=30)

        def sign_in(name: str, password: str = "nope nope") -> httpx.Response:
            return client.post("/login", data={"username": name, "password": password})

        for name in ("ann", "zed"):  # a user and no user: the same answers, the same limit
            answers = [sign_in(name).status_code for _ in range(FAILURES_PER_NAME)]
            assert answers == [401] * FAILURES_PER_NAME
            blocked = sign_in(name, PASSWORD)  # even the right password is not checked now
            assert blocked.status_code == 429
            assert 1 <= int(blocked.headers["Retry-After"]) <= WINDOW_S
            assert "too many failed sign-ins" in blocked.text and name not in blocked.text
            assert "set-cookie" not in blocked.headers
        # vic's name has no failures: the address has 10 of its 20, so vic signs in
        assert signed_in(base, "vic").cookies.get("retrieval_eval_session")
        others = FAILURES_PER_ADDRESS - 2 * FAILURES_PER_NAME
        assert [sign_in(f"guess{i}").status_code for i in range(others)] == [401] * others
        over = sign_in("vic", PASSWORD)  # the address's limit now: no name gets in from it
        assert over.status_code == 429 and int(over.headers["Retry-After"]) >= 1


def test_the_throttle_forgets_a_failure_once_it_leaves_the_window() -> None:
    now = [1000.0]
    throttle = LoginThrottle(per_name=2, per_address=2, window_s=60, clock=lambda: now[0])
    throttle.failed("ann", "10.0.0.1")
    now[0] += 30
    throttle.failed("ann", "10.0.0.2")
    assert throttle.retry_after("ann", "10.0.0.3") == 30  # the first failure leaves at +60
    assert throttle.retry_after("bob", "10.0.0.1") is None
    now[0] += 30
    assert throttle.retry_after("ann", "10.0.0.3") is None
    throttle.failed("ann", "10.0.0.1")
    throttle.succeeded("ann")  # a right password clears the name, not the address
    assert throttle.retry_after("ann", "10.0.0.3") is None
    throttle.failed("bob", "10.0.0.1")
    assert throttle.retry_after("carl", "10.0.0.1") == 60  # 2 failures from .1 just now
