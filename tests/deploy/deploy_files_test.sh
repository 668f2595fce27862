#!/usr/bin/env bash
# deploy_files_test: the files under deploy/ and the Dockerfile are what docs/deploy.md says.
#   - deploy/nginx.conf passes `nginx -t` as written (a temp prefix for its relative paths);
#   - every deploy/k8s/*.yaml parses (python3-yaml) and has the probes, volumes, grace period,
#     autoscaling metric and disruption budget the scale-out design needs;
#   - the Dockerfile's runtime stage installs a package for every shared library build/bin/talkbox
#     loads (ldd + dpkg -S), so the image does not fail at start on a missing .so.
# Usage: deploy_files_test.sh SOURCE_DIR [TALKBOX_BINARY]
set -euo pipefail
src=${1:?usage: deploy_files_test.sh SOURCE_DIR [TALKBOX_BINARY]}
bin=${2:-$src/build/bin/talkbox}
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v nginx >/dev/null || fail "nginx is not installed (scripts/setup.sh installs it)"
python3 -c 'import yaml' 2>/dev/null || fail "python3-yaml is not installed (scripts/setup.sh installs it)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/talkbox-deploy-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/logs" "$tmp/tmp"
nginx -t -q -p "$tmp/" -c "$src/deploy/nginx.conf" -g "pid $tmp/nginx.pid; error_log $tmp/error.log;" ||
  fail "nginx -t refused deploy/nginx.conf"
for d in "proxy_buffering off" "proxy_http_version 1.1" "proxy_next_upstream error timeout http_502 http_503" "proxy_read_timeout"; do
  grep -q "$d" "$src/deploy/nginx.conf" || fail "deploy/nginx.conf lacks '$d'"
done
echo "ok: nginx -t deploy/nginx.conf"

python3 - "$src" <<'PY'
import glob, re, sys, yaml
src = sys.argv[1]
docs = {}
for path in sorted(glob.glob(src + "/deploy/k8s/*.yaml")):
    with open(path) as f:
        for d in yaml.safe_load_all(f):
            assert isinstance(d, dict) and "kind" in d and "apiVersion" in d, f"{path}: not a Kubernetes object"
            docs.setdefault(d["kind"], []).append(d)
    print("ok: parsed", path[len(src) + 1:])
def one(kind):
    assert len(docs.get(kind, [])) == 1, f"expected one {kind}, found {len(docs.get(kind, []))}"
    return docs[kind][0]
dep = one("Deployment")
pod = dep["spec"]["template"]["spec"]
c = pod["containers"][0]
assert c["readinessProbe"]["httpGet"]["path"] == "/ready", "readiness probe must be /ready"
assert c["livenessProbe"]["httpGet"]["path"] == "/health", "liveness probe must be /health"
args = c["args"]
drain = float(args[args.index("--drain-timeout") + 1])
pre = c.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", [])
pre_s = float(pre[1]) if pre[:1] == ["sleep"] else 0
grace = pod["terminationGracePeriodSeconds"]
assert grace > pre_s + drain, f"terminationGracePeriodSeconds {grace} must exceed preStop {pre_s} + --drain-timeout {drain}"
assert args[args.index("--voices-dir") + 1] == "/voices"
assert pod["securityContext"]["runAsNonRoot"] is True
claims = {v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"]}
pvcs = {p["metadata"]["name"]: p for p in docs["PersistentVolumeClaim"]}
assert claims <= set(pvcs), f"volumes name unknown claims {claims - set(pvcs)}"
assert "ReadWriteMany" in pvcs["talkbox-voices"]["spec"]["accessModes"], "the voices claim must be ReadWriteMany"
hpa = one("HorizontalPodAutoscaler")
metric = hpa["spec"]["metrics"][0]["pods"]["metric"]["name"]
doc = open(src + "/docs/server.md").read()
assert f"`{metric}`" in doc, f"the HPA scales on {metric}, which docs/server.md does not list"
assert one("PodDisruptionBudget")["spec"]["selector"] == dep["spec"]["selector"]
assert one("Service")["spec"]["selector"] == dep["spec"]["selector"]["matchLabels"]
print(f"ok: deployment (grace {grace} s > preStop {pre_s} + drain {drain}), claims, HPA on {metric}, PDB, Service")
PY

# Runtime libraries: each one build/bin/talkbox loads must come from a package the runtime stage
# installs, or from one debian:12-slim already has (libc6, libstdc++6, libgcc-s1 and their kin).
[ -x "$bin" ] || fail "no binary at $bin"
pkgs=$(awk '/^FROM debian:12-slim/{r=1} r' "$src/Dockerfile" | sed -n '/install -y/,/&&/p' | tr -s ' \\\n' '\n' |
  grep -E '^(lib|ca-certificates)' | sort -u)
[ -n "$pkgs" ] || fail "no apt-get install of runtime packages in the Dockerfile's debian:12-slim stage"
# What those packages bring with them (their installed dependencies, recursively) counts too.
closure=$(apt-cache depends --recurse --installed --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
  --no-enhances $pkgs 2>/dev/null | grep -v '^ ' | sed 's/:.*//' | sort -u)
base="libc6 libstdc++6 libgcc-s1 zlib1g"
missing=()
libs=$(ldd "$bin" | awk '/=>/ {print $3}')
# One dpkg -S for all of them (each call reads dpkg's whole database: one per library took ~2 min
# on a loaded machine, against this test's 120 s limit). A library is looked up by its real path,
# then by the path ldd gave (usrmerge: /lib vs /usr/lib).
declare -A owner=()
while IFS= read -r line; do
  [[ $line == *": /"* ]] && owner[${line#*: }]=${line%%:*}
done < <(for l in $libs; do readlink -f "$l"; echo "$l"; done | sort -u | xargs dpkg -S 2>/dev/null || true)
for lib in $libs; do
  real=$(readlink -f "$lib")
  pkg=${owner[$real]:-${owner[$lib]:-}}
  [ -n "$pkg" ] || { missing+=("$lib (from no package)"); continue; }
  grep -qx -- "$pkg" <<<"$closure"$'\n'"${base// /$'\n'}" || missing+=("$lib ($pkg)")
done
[ ${#missing[@]} -eq 0 ] || fail "the Dockerfile's runtime stage lacks: ${missing[*]}"
echo "ok: the Dockerfile's runtime stage provides every library of $bin"
echo "deploy_files_test: all checks passed"
