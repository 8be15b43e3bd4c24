//! A checker of the Prometheus text format (exposition format 0.0.4) as node_exporter's
//! textfile collector reads it: the reports of `drift --format prometheus` and of
//! `reconcile --metrics` are held to it (tests/ops.rs checks the checker itself). Returns the
//! series and their values, or the first line it rejects.

use std::collections::{BTreeMap, BTreeSet};

fn metric_name_ok(n: &str) -> bool {
    let mut c = n.chars();
    c.next().is_some_and(|f| f.is_ascii_alphabetic() || f == '_' || f == ':')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_' || x == ':')
}

fn label_name_ok(n: &str) -> bool {
    let mut c = n.chars();
    c.next().is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
        && !n.starts_with("__")
}

/// Parse `{a="x",b="y"}` into sorted pairs; errors on bad syntax.
fn parse_labels(s: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        let eq = rest.find('=').ok_or(format!("label without `=` in `{s}`"))?;
        let name = &rest[..eq];
        if !label_name_ok(name) {
            return Err(format!("bad label name `{name}`"));
        }
        let mut chars = rest[eq + 1..].char_indices();
        if chars.next().map(|(_, c)| c) != Some('"') {
            return Err(format!("label value of `{name}` is not quoted"));
        }
        let mut value = String::new();
        let mut end = None;
        let mut escaped = false;
        for (i, c) in chars {
            if escaped {
                match c {
                    '\\' | '"' => value.push(c),
                    'n' => value.push('\n'),
                    _ => return Err(format!("bad escape `\\{c}`")),
                }
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                end = Some(eq + 1 + i);
                break;
            } else if c == '\n' {
                return Err("raw newline in a label value".into());
            } else {
                value.push(c);
            }
        }
        let end = end.ok_or(format!("unterminated label value in `{s}`"))?;
        out.push((name.to_string(), value));
        rest = &rest[end + 1..];
        if let Some(r) = rest.strip_prefix(',') {
            rest = r;
        } else if !rest.is_empty() {
            return Err(format!("expected `,` between labels in `{s}`"));
        }
    }
    let names: BTreeSet<&String> = out.iter().map(|(n, _)| n).collect();
    if names.len() != out.len() {
        return Err(format!("repeated label in `{s}`"));
    }
    out.sort();
    Ok(out)
}

fn float_ok(v: &str) -> bool {
    matches!(v, "NaN" | "+Inf" | "-Inf") || v.parse::<f64>().is_ok()
}

/// Validate a textfile: names, HELP/TYPE before the samples of their metric, one TYPE per
/// metric, samples of a metric together, label syntax, float values, no duplicate series.
pub fn validate_prometheus(text: &str) -> Result<BTreeMap<String, f64>, String> {
    if !text.ends_with('\n') {
        return Err("the file must end with a newline".into());
    }
    let mut typed: BTreeMap<String, String> = BTreeMap::new();
    let mut helped: BTreeSet<String> = BTreeSet::new();
    let mut sampled: BTreeSet<String> = BTreeSet::new();
    let mut series: BTreeMap<String, f64> = BTreeMap::new();
    let mut last: Option<String> = None;
    for (i, line) in text.lines().enumerate() {
        let at = |m: String| format!("line {}: {m}: `{line}`", i + 1);
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# ") {
            let mut parts = rest.splitn(3, ' ');
            let kw = parts.next().unwrap_or("");
            let name = parts.next().unwrap_or("");
            let arg = parts.next().unwrap_or("");
            if kw != "HELP" && kw != "TYPE" {
                continue; // a plain comment
            }
            if !metric_name_ok(name) {
                return Err(at(format!("bad metric name `{name}`")));
            }
            if sampled.contains(name) {
                return Err(at(format!("{kw} for `{name}` after its samples")));
            }
            if kw == "TYPE" {
                if !["counter", "gauge", "histogram", "summary", "untyped"].contains(&arg) {
                    return Err(at(format!("bad type `{arg}`")));
                }
                if typed.insert(name.to_string(), arg.to_string()).is_some() {
                    return Err(at(format!("second TYPE for `{name}`")));
                }
            } else if !helped.insert(name.to_string()) || arg.is_empty() {
                return Err(at(format!("second or empty HELP for `{name}`")));
            }
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let (name_labels, rest) = match line.find('}') {
            Some(close) => (&line[..=close], line[close + 1..].trim_start()),
            None => line.split_once(' ').ok_or(at("sample without a value".into()))?,
        };
        let (name, labels) = match name_labels.split_once('{') {
            Some((n, l)) => (n, parse_labels(l.strip_suffix('}').ok_or(at("unclosed `{`".into()))?).map_err(at)?),
            None => (name_labels, Vec::new()),
        };
        if !metric_name_ok(name) {
            return Err(at(format!("bad metric name `{name}`")));
        }
        if !typed.contains_key(name) || !helped.contains(name) {
            return Err(at(format!("sample of `{name}` before its HELP and TYPE")));
        }
        if last.as_deref() != Some(name) && sampled.contains(name) {
            return Err(at(format!("samples of `{name}` are not together")));
        }
        let mut fields = rest.split(' ');
        let value = fields.next().unwrap_or("");
        if !float_ok(value) {
            return Err(at(format!("value `{value}` is not a float")));
        }
        if let Some(ts) = fields.next()
            && ts.parse::<i64>().is_err()
        {
            return Err(at(format!("timestamp `{ts}` is not an integer")));
        }
        let key = format!("{name}{labels:?}");
        if series.insert(key.clone(), value.parse().unwrap_or(f64::NAN)).is_some() {
            return Err(at(format!("duplicate series {key}")));
        }
        sampled.insert(name.to_string());
        last = Some(name.to_string());
    }
    Ok(series)
}

/// The value of the series `name` (with the one label `kind="KIND"` when given) in what
/// [`validate_prometheus`] returned; a missing series fails the test, naming what there is.
pub fn sample(series: &BTreeMap<String, f64>, name: &str, kind: Option<&str>) -> f64 {
    let key = match kind {
        Some(k) => format!("{name}[(\"kind\", \"{k}\")]"),
        None => format!("{name}[]"),
    };
    *series.get(&key).unwrap_or_else(|| panic!("no series {key} in {series:?}"))
}
