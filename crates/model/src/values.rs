//! Normalised limit values: TRES maps, durations, fairshare, QoS lists.
//!
//! One representation for both sides of the diff: TRES as `{name: integer}` with mem in MiB,
//! durations in minutes, QoS lists as sets. Parsing of sacctmgr's printed forms lives here too
//! because it is pure and shared by the snapshot parser and the desired loader. No I/O.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::names::Name;

/// A TRES limit map (`cpu=100,mem=1536`), mem in MiB, every value a plain integer.
pub type Tres = BTreeMap<String, u64>;

/// Largest job count (GrpJobs, GrpSubmitJobs, MaxJobs, MaxSubmitJobs) or number of minutes
/// (GrpWall, MaxWall) slurmdbd stores: these limits are 32-bit and the two top values mean
/// "unset" (NO_VAL 0xfffffffe, INFINITE 0xffffffff).
pub const MAX_COUNT: u64 = 0xffff_fffd;
/// Largest TRES limit: 64-bit, the three top values reserved (NO_CONSUME_VAL64, NO_VAL64,
/// INFINITE64).
pub const MAX_TRES: u64 = 0xffff_ffff_ffff_fffc;
/// Largest number of shares: 0x7fffffff means `parent`.
pub const MAX_SHARES: u32 = 0x7fff_fffe;

/// `v` if slurmdbd can store it (`max` is one of the constants above), else why not.
pub fn in_range(v: u64, max: u64, what: &str) -> Result<u64, String> {
    if v <= max { Ok(v) } else { Err(format!("`{what}` is {v}; slurmdbd stores 0 to {max}")) }
}

/// Parse a TRES string as sacctmgr prints it: `billing=1000,cpu=100,mem=1.50G,node=2`.
/// Units (`K`, `M`, `G`, `T`, `P`) are accepted for every TRES and converted to the base unit
/// sacctmgr uses for mem (MiB); a result that is not a whole number is an error.
pub fn parse_tres(s: &str) -> Result<Tres, String> {
    let mut out = Tres::new();
    if s.is_empty() {
        return Ok(out);
    }
    for part in s.split(',') {
        let (k, v) = part.split_once('=').ok_or_else(|| format!("TRES entry `{part}` has no `=`"))?;
        if !valid_tres_name(k) {
            return Err(format!("`{k}` is not a TRES name"));
        }
        let n = parse_tres_value(k, v)?;
        if out.insert(k.to_string(), n).is_some() {
            return Err(format!("TRES `{k}` appears twice"));
        }
    }
    Ok(out)
}

/// A TRES name: `cpu`, `mem`, `node`, `billing`, `energy`, `gres/gpu`, `gres/gpu:a100`,
/// `license/x`, `fs/disk`, `bb/cray`.
pub fn valid_tres_name(k: &str) -> bool {
    !k.is_empty()
        && k.len() <= 64
        && k.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && k.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '/' | ':' | '_' | '-' | '.'))
}

/// Parse one TRES value as sacctmgr reads it: a unit suffix K/M/G/T/P multiplies by 1024 per
/// step, from a count for every TRES (`cpu=10K` is 10240, `billing=1M` 1048576) and from MiB
/// for `mem`, which is stored in MiB (`mem=2G` is 2048, `mem=512K` is refused: not whole MiB).
pub fn parse_tres_value(name: &str, v: &str) -> Result<u64, String> {
    let bad = || format!("`{v}` is not a valid value for TRES `{name}`");
    if v.is_empty() {
        return Err(bad());
    }
    let (num, unit) = match v.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&v[..i], Some(c.to_ascii_uppercase())),
        _ => (v, None),
    };
    let steps: u32 = match unit {
        None => {
            return num.parse::<u64>().map_err(|_| bad());
        }
        Some('K') => 1,
        Some('M') => 2,
        Some('G') => 3,
        Some('T') => 4,
        Some('P') => 5,
        _ => return Err(bad()),
    };
    // the unit the stored number counts: MiB for memory, one for everything else
    let (base, what) = if name == "mem" { (2, "MiB") } else { (0, "units") };
    // decimal like 1.50 -> scaled exactly using hundredths
    let (int_part, frac_part) = num.split_once('.').unwrap_or((num, ""));
    if int_part.is_empty() || !int_part.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    if frac_part.len() > 6 || !frac_part.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let whole: u128 = format!("{int_part}{frac_part}").parse().map_err(|_| bad())?;
    let num = whole.checked_mul(1024u128.pow(steps)).ok_or_else(bad)?;
    let denom = 10u128.pow(frac_part.len() as u32) * 1024u128.pow(base);
    if !num.is_multiple_of(denom) {
        return Err(format!("`{v}` for TRES `{name}` is not a whole number of {what}"));
    }
    u64::try_from(num / denom).map_err(|_| bad())
}

/// Render a TRES map for an argv: `cpu=100,mem=1536` (sorted, plain integers).
pub fn tres_to_arg(t: &Tres) -> String {
    let mut s = String::new();
    for (k, v) in t {
        if !s.is_empty() {
            s.push(',');
        }
        s.push_str(k);
        s.push('=');
        s.push_str(&v.to_string());
    }
    s
}

/// Parse a duration as sacctmgr prints it (`HH:MM:SS`, `D-HH:MM:SS`, `MM:SS`) into minutes.
/// Seconds must be zero (sacctmgr stores minutes); minutes and seconds after a `:` are 0-59,
/// hours after `D-` 0-23. The range slurmdbd stores ([`MAX_COUNT`]) is the caller's check.
pub fn parse_duration(s: &str) -> Result<u64, String> {
    let bad = || format!("`{s}` is not a duration (expected minutes, `HH:MM:SS` or `D-HH:MM:SS`)");
    let (days, rest) = match s.split_once('-') {
        Some((d, r)) => (d.parse::<u64>().map_err(|_| bad())?, r),
        None => (0, s),
    };
    let parts: Vec<&str> = rest.split(':').collect();
    let nums: Vec<u64> = parts
        .iter()
        .map(|p| {
            if p.is_empty() || p.len() > 4 || !p.bytes().all(|b| b.is_ascii_digit()) {
                Err(bad())
            } else {
                p.parse::<u64>().map_err(|_| bad())
            }
        })
        .collect::<Result<_, _>>()?;
    let (h, m, sec) = match nums.as_slice() {
        [m] if days == 0 => (0, *m, 0),
        [h] => (*h, 0, 0),
        [m, sec] if days == 0 => (0, *m, *sec),
        [h, m] => (*h, *m, 0),
        [h, m, sec] => (*h, *m, *sec),
        _ => return Err(bad()),
    };
    let minutes_after_hours = nums.len() >= 2 && !(nums.len() == 2 && days == 0);
    if sec > 59 || (minutes_after_hours && m > 59) || (s.contains('-') && h > 23) {
        return Err(format!(
            "`{s}` is not a duration: minutes and seconds are 0-59 and hours after `D-` 0-23 (e.g. `1-00:00:00`, not `00:60:00`)"
        ));
    }
    if sec != 0 {
        return Err(format!("`{s}` has seconds; Slurm stores limits in whole minutes"));
    }
    days.checked_mul(1440)
        .and_then(|d| h.checked_mul(60).and_then(|h| d.checked_add(h)))
        .and_then(|x| x.checked_add(m))
        .ok_or_else(bad)
}

/// Fairshare: a number of shares, or `parent`. Slurm's default (1) is represented as unset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fairshare {
    Shares(u32),
    Parent,
}

impl Fairshare {
    pub fn parse(s: &str) -> Result<Option<Fairshare>, String> {
        if s.eq_ignore_ascii_case("parent") {
            return Ok(Some(Fairshare::Parent));
        }
        let n: u32 = s.parse().map_err(|_| format!("`{s}` is not a fairshare (a number or `parent`)"))?;
        Ok(Fairshare::normal(n))
    }
    /// `1` is Slurm's default and what `Fairshare=-1` resets to: store it as unset.
    pub fn normal(n: u32) -> Option<Fairshare> {
        if n == 1 { None } else { Some(Fairshare::Shares(n)) }
    }
    pub fn to_arg(&self) -> String {
        match self {
            Fairshare::Shares(n) => n.to_string(),
            Fairshare::Parent => "parent".into(),
        }
    }
}

impl fmt::Display for Fairshare {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_arg())
    }
}

/// The QoS list of an association as stored (`wopl withrawqos`): inherited, an explicit set, or
/// deltas on the inherited list (`+hi,-normal`). The desired side never holds deltas.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QosList {
    #[default]
    Inherit,
    Set(BTreeSet<Name>),
    Delta {
        add: BTreeSet<Name>,
        remove: BTreeSet<Name>,
    },
}

impl QosList {
    /// The effective list given the parent's effective list.
    pub fn effective(&self, parent: &BTreeSet<Name>) -> BTreeSet<Name> {
        match self {
            QosList::Inherit => parent.clone(),
            QosList::Set(s) => s.clone(),
            QosList::Delta { add, remove } => {
                let mut s: BTreeSet<Name> = parent.difference(remove).cloned().collect();
                s.extend(add.iter().cloned());
                s
            }
        }
    }

    pub fn is_inherit(&self) -> bool {
        matches!(self, QosList::Inherit)
    }

    /// What deleting the QoS `gone` leaves of a stored delta: slurmdbd strips their `+q`/`-q`
    /// (as_mysql_qos.c, remove), and an emptied delta inherits. Other lists are returned as
    /// they are (an explicit list or a DefaultQOS that names a QoS keeps it from being deleted:
    /// `RuleModel` refuses, so plans change them first).
    pub fn delta_stripped(&self, gone: &BTreeSet<Name>) -> QosList {
        match self {
            QosList::Delta { add, remove } if add.iter().chain(remove).any(|n| gone.contains(n)) => {
                let add: BTreeSet<Name> = add.difference(gone).cloned().collect();
                let remove: BTreeSet<Name> = remove.difference(gone).cloned().collect();
                if add.is_empty() && remove.is_empty() { QosList::Inherit } else { QosList::Delta { add, remove } }
            }
            _ => self.clone(),
        }
    }

    /// What slurmdbd stores after `set qos=W` on an association that stores `self`
    /// (as_mysql_assoc.c, modify; checked on 22.05 and 24.11 by tests/differential_real.rs):
    /// a plain list, or an empty one, replaces whatever is stored. Each `+q`/`-q` of a delta
    /// write, in the order written (adds, then removes, as `display` prints them), edits the
    /// explicit list when there is one, and the stored deltas otherwise (replacing an earlier
    /// `+q`/`-q` of the same name). A `-q` that empties an explicit list leaves the association
    /// inheriting, with that removal and the later ones kept as deltas. So a delta is stored
    /// as written only on an association that inherits.
    pub fn written(&self, write: &QosList) -> QosList {
        let QosList::Delta { add, remove } = write else { return write.clone() };
        let mut set = match self {
            QosList::Set(s) if !s.is_empty() => Some(s.clone()),
            _ => None,
        };
        let (mut plus, mut minus) = match self {
            QosList::Delta { add, remove } => (add.clone(), remove.clone()),
            _ => (BTreeSet::new(), BTreeSet::new()),
        };
        for (adds, n) in add.iter().map(|n| (true, n)).chain(remove.iter().map(|n| (false, n))) {
            match set.as_mut() {
                Some(s) if adds => {
                    s.insert(n.clone());
                }
                Some(s) => {
                    s.remove(n);
                    if s.is_empty() {
                        set = None;
                        minus.insert(n.clone());
                    }
                }
                None => {
                    plus.remove(n);
                    minus.remove(n);
                    if adds {
                        plus.insert(n.clone())
                    } else {
                        minus.insert(n.clone())
                    };
                }
            }
        }
        match set {
            Some(s) => QosList::Set(s),
            None if plus.is_empty() && minus.is_empty() => QosList::Inherit,
            None => QosList::Delta { add: plus, remove: minus },
        }
    }

    /// Human form used in plans: `(inherit)`, `a,b`, `+a,-b`.
    pub fn display(&self) -> String {
        match self {
            QosList::Inherit => "(inherit)".into(),
            QosList::Set(s) => join(s),
            QosList::Delta { add, remove } => {
                let mut v: Vec<String> = add.iter().map(|n| format!("+{n}")).collect();
                v.extend(remove.iter().map(|n| format!("-{n}")));
                v.join(",")
            }
        }
    }
}

/// Join names with commas.
pub fn join(s: &BTreeSet<Name>) -> String {
    let mut out = String::new();
    for n in s {
        if !out.is_empty() {
            out.push(',');
        }
        out.push_str(n.as_str());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_writes_edit_an_explicit_list_and_stack_on_inheritance() {
        fn n(v: &[&'static str]) -> BTreeSet<Name> {
            v.iter().map(|x| Name::from_static(x)).collect()
        }
        let delta = |a: &[&'static str], r: &[&'static str]| QosList::Delta { add: n(a), remove: n(r) };
        let set = |v: &[&'static str]| QosList::Set(n(v));
        // on an explicit list: edits it, stays explicit
        assert_eq!(set(&["normal"]).written(&delta(&["hi"], &[])), set(&["hi", "normal"]));
        assert_eq!(set(&["hi", "normal"]).written(&delta(&[], &["hi"])), set(&["normal"]));
        // emptying it: inherits, the removal kept as a delta
        assert_eq!(set(&["hi"]).written(&delta(&[], &["hi"])), delta(&[], &["hi"]));
        // on inheritance or deltas: stacks, a name's later sign wins
        assert_eq!(QosList::Inherit.written(&delta(&["hi"], &[])), delta(&["hi"], &[]));
        assert_eq!(delta(&["hi"], &["lo"]).written(&delta(&["lo"], &[])), delta(&["hi", "lo"], &[]));
        assert_eq!(delta(&["hi"], &[]).written(&delta(&[], &["hi"])), delta(&[], &["hi"]));
        // deleting a QoS strips it from deltas only; an emptied delta inherits
        let gone = n(&["hi"]);
        assert_eq!(delta(&["hi"], &["lo"]).delta_stripped(&gone), delta(&[], &["lo"]));
        assert_eq!(delta(&[], &["hi"]).delta_stripped(&gone), QosList::Inherit);
        assert_eq!(set(&["hi"]).delta_stripped(&gone), set(&["hi"]));
        // plain and empty writes replace
        assert_eq!(delta(&["hi"], &[]).written(&set(&["lo"])), set(&["lo"]));
        assert_eq!(set(&["lo"]).written(&QosList::Inherit), QosList::Inherit);
    }

    #[test]
    fn tres_units() {
        let t = parse_tres("billing=1000,cpu=100,mem=1.50G,node=2").unwrap();
        assert_eq!(t["mem"], 1536);
        assert_eq!(t["cpu"], 100);
        assert_eq!(parse_tres("mem=512M").unwrap()["mem"], 512);
        assert_eq!(parse_tres("mem=1T").unwrap()["mem"], 1024 * 1024);
        assert_eq!(parse_tres("gres/gpu=20").unwrap()["gres/gpu"], 20);
        assert!(parse_tres("mem=1.001G").is_err());
        // as sacctmgr stores them (seen on 22.05.8: cpu=10K -> 10240, billing=1M -> 1048576)
        assert_eq!(parse_tres("cpu=10K").unwrap()["cpu"], 10240);
        assert_eq!(parse_tres("billing=1M").unwrap()["billing"], 1 << 20);
        assert_eq!(parse_tres("gres/gpu=2K").unwrap()["gres/gpu"], 2048);
        assert_eq!(parse_tres("mem=2048K").unwrap()["mem"], 2);
        assert!(parse_tres("mem=512K").is_err());
        assert!(parse_tres("cpu=1.5").is_err());
        assert!(parse_tres("cpu").is_err());
        assert!(parse_tres("cpu=x").is_err());
        assert!(parse_tres("CPU=1").is_err());
        assert_eq!(tres_to_arg(&t), "billing=1000,cpu=100,mem=1536,node=2");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("01:30:00").unwrap(), 90);
        assert_eq!(parse_duration("1-00:00:00").unwrap(), 1440);
        assert_eq!(parse_duration("00:02:00").unwrap(), 2);
        assert!(parse_duration("00:00:30").is_err());
        assert!(parse_duration("x").is_err());
        assert!(parse_duration("").is_err());
        assert_eq!(parse_duration("100:00:00").unwrap(), 6000);
        assert_eq!(parse_duration("2-23:59:00").unwrap(), 2 * 1440 + 23 * 60 + 59);
        for bad in ["00:60:00", "1-24:00:00", "01:00:60", "1-00:75"] {
            let e = parse_duration(bad).unwrap_err();
            assert!(e.contains("0-59"), "{bad}: {e}");
        }
    }

    #[test]
    fn ranges_are_what_slurmdbd_stores() {
        assert!(in_range(MAX_COUNT, MAX_COUNT, "x").is_ok());
        assert!(in_range(u32::MAX as u64, MAX_COUNT, "x").unwrap_err().contains("0 to 4294967293"));
        assert!(in_range(u64::MAX, MAX_TRES, "x").unwrap_err().contains("0 to 18446744073709551612"));
    }

    #[test]
    fn fairshare_default_is_unset() {
        assert_eq!(Fairshare::parse("1").unwrap(), None);
        assert_eq!(Fairshare::parse("parent").unwrap(), Some(Fairshare::Parent));
        assert_eq!(Fairshare::parse("10").unwrap(), Some(Fairshare::Shares(10)));
    }
}
