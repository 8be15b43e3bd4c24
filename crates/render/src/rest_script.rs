//! The `script` format under `--transport rest`: a POSIX sh script that sends, with curl, the
//! slurmrestd calls `apply --transport rest` sends for the plan's steps (`rest::write`), in
//! order; the read-modify-writes read, change and send back through jq with the same ops
//! (`rest::write::JQ_OPS`). Each answer is checked as apply checks it (HTTP 200, no error or
//! warning, something removed by a DELETE) and the script stops at the first that fails.
//!
//! The token is never in the script nor in an argument list: it is read from `SLURM_JWT_FILE`
//! into a header file private to the run (`curl -H @FILE`). Must not: print, read the token,
//! or put free text anywhere but in single-quoted words ([`sh_quote`]).

use std::io::{self, Write};

use serde_json::{Value, json};
use slurmplan_plan::Plan;
use slurmplan_rest::transport::{delete_path, name_path, rows_path};
use slurmplan_rest::write::{ASSOC_TRES_LISTS, Call, JQ_OPS, Op, RowChange, qos_ops, record_ops, row_ops};

use super::script::{comment, header};
use super::{sh_join, sh_quote};

/// Where the script sends its calls.
pub struct Target<'a> {
    pub url: &'a str,
    pub user: &'a str,
    /// The data parser (`v0.0.42`).
    pub parser: &'a str,
}

const PRELUDE: &str = r#"set -eu
api="$SLURMRESTD_URL/slurmdb/$SLURMRESTD_PARSER"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the token goes from its file into a header file of this run only (never into an argument)
(umask 077 && printf 'X-SLURM-USER-TOKEN: %s\nX-SLURM-USER-NAME: %s\n' "$(cat "$SLURM_JWT_FILE")" "$SLURMRESTD_USER" >"$tmp/headers")
# call METHOD PATH [BODY]: the answer goes to $tmp/body; anything but HTTP 200 with no error
# and no warning in it stops the script (a 304 "Data has not changed" too: nothing was done)
call() {
  if [ $# -ge 3 ]; then
    printf '%s' "$3" >"$tmp/send"
    code=$(curl -sS -o "$tmp/body" -w '%{http_code}' -X "$1" -H @"$tmp/headers" -H 'Accept: application/json' -H 'Content-Type: application/json' --data-binary @"$tmp/send" "$api/$2")
  else
    code=$(curl -sS -o "$tmp/body" -w '%{http_code}' -X "$1" -H @"$tmp/headers" -H 'Accept: application/json' "$api/$2")
  fi
  if [ "$code" != 200 ] || [ "$(jq '((.errors // []) + (.warnings // [])) | length' "$tmp/body")" != 0 ]; then
    echo "$1 $2: HTTP $code" >&2
    cat "$tmp/body" >&2
    echo >&2
    exit 1
  fi
}
# removed WHAT: the DELETE just sent removed at least one association
removed() {
  [ "$(jq '(.removed_associations // []) | length' "$tmp/body")" != 0 ] || { echo "$1: slurmdbd removed nothing" >&2; exit 1; }
}
# edit FILTER: the answer just read, through the ops program and FILTER, into $tmp/edited
edit() {
  { cat "$tmp/ops.jq"; printf '%s\n' "$1"; } >"$tmp/prog.jq"
  jq -c -f "$tmp/prog.jq" "$tmp/body" >"$tmp/edited"
}
"#;

fn ops_json(ops: &[Op]) -> Value {
    Value::Array(ops.iter().map(Op::json).collect())
}

/// The lines of one call.
fn lines(call: &Call) -> Result<Vec<String>, String> {
    let word = |s: &str| sh_quote(s);
    let q = |v: &Value| v.to_string();
    Ok(match call {
        Call::Post { endpoint, body } => vec![format!("call POST {} {}", word(endpoint), word(&body.to_string()))],
        Call::Delete { endpoint, filters } => {
            let path = delete_path(endpoint, filters).map_err(|e| e.message)?;
            vec![format!("call DELETE {}", word(&path)), format!("removed {}", word(&format!("DELETE {path}")))]
        }
        Call::DeleteQos { name } => vec![format!("call DELETE {}", word(&name_path("qos/", name)))],
        Call::Rows { cluster, keys, change } => {
            let path = rows_path(cluster, keys).map_err(|e| e.message)?;
            let keys: Vec<Value> =
                keys.iter().map(|k| json!({"account": k.account, "user": k.user, "partition": k.partition})).collect();
            let any = matches!(change, RowChange::MakeDefault);
            let filter = format!(
                "rows({}; {}; {any}; {}; {})",
                q(&json!(cluster)),
                q(&json!(keys)),
                q(&json!(ASSOC_TRES_LISTS)),
                q(&ops_json(&row_ops(change)))
            );
            vec![
                format!("call GET {}", word(&path)),
                format!("edit {}", word(&filter)),
                "call POST 'associations/' \"$(cat \"$tmp/edited\")\"".to_string(),
            ]
        }
        Call::Qos { name, set } => {
            let ops = qos_ops(set).map_err(|u| u.0)?;
            vec![
                format!("call GET {}", word(&name_path("qos/", name))),
                format!("edit {}", word(&format!("one_qos({}; {})", q(&json!(name)), q(&ops_json(&ops))))),
                "call POST 'qos/' \"$(cat \"$tmp/edited\")\"".to_string(),
            ]
        }
        Call::Record { name, record } => vec![
            format!("call GET {}", word(&name_path("account/", name))),
            format!(
                "edit {}",
                word(&format!("one_account({}; {})", q(&json!(name)), q(&ops_json(&record_ops(record)))))
            ),
            "call POST 'accounts/' \"$(cat \"$tmp/edited\")\"".to_string(),
        ],
    })
}

/// The script of `plan`, whose steps' calls are `calls` (`apply::writer::rest_calls`, one list
/// per step, in order), sent to `target`.
pub fn render(plan: &Plan, calls: &[Vec<Call>], target: &Target, out: &mut dyn Write) -> io::Result<()> {
    header(plan, out)?;
    writeln!(out, "# The slurmrestd calls `slurmplan apply --transport rest` sends for this plan, with curl;")?;
    writeln!(out, "# the steps that change existing objects read them, change them with jq and send them back.")?;
    writeln!(out, "# Each answer is checked and the script stops at the first failure, but it does not verify")?;
    writeln!(out, "# the result or refuse a stale plan: `slurmplan apply --transport rest` does both.")?;
    writeln!(out, "# Needs curl and jq. SLURM_JWT_FILE must name a file holding the JWT (the token is never in")?;
    writeln!(out, "# this script). SLURMRESTD_URL, SLURMRESTD_USER and SLURMRESTD_PARSER default to the plan's.")?;
    for (var, value) in
        [("SLURMRESTD_URL", target.url), ("SLURMRESTD_USER", target.user), ("SLURMRESTD_PARSER", target.parser)]
    {
        writeln!(out, "[ -n \"${{{var}:-}}\" ] || {var}={}", sh_quote(value))?;
    }
    writeln!(out, ": \"${{SLURM_JWT_FILE:?set SLURM_JWT_FILE to the file holding the JWT}}\"")?;
    write!(out, "{PRELUDE}")?;
    writeln!(out, "cat >\"$tmp/ops.jq\" <<'SLURMPLAN_JQ'")?;
    write!(out, "{JQ_OPS}")?;
    writeln!(out, "SLURMPLAN_JQ")?;
    for (step, calls) in plan.steps.iter().zip(calls) {
        writeln!(out)?;
        writeln!(out, "# step {}: {}", step.number, comment(&sh_join(&step.argv)))?;
        for call in calls {
            for line in lines(call).map_err(io::Error::other)? {
                writeln!(out, "{line}")?;
            }
        }
    }
    Ok(())
}
