# Sourced by the scripts of scripts/h100: cargo's JSON messages on stdin → the executable of
# target $1 of kind $2 (`cargo build --message-format json | artifact kernels test`).
artifact() {
  python3 -c '
import json, sys
name, kind = sys.argv[1], sys.argv[2]
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") \
       and m["target"]["name"] == name and kind in m["target"]["kind"]:
        print(m["executable"])' "$1" "$2"
}
