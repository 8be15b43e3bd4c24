//! Diagnostics — errors and warnings about user input, with a location and a hint.
//!
//! Loaders collect every problem they find into a `Vec<Diagnostic>` so a user sees all of them
//! at once. Rendering a diagnostic to text is here too (pure, returns a String); printing is the
//! cli's job.

use serde::Serialize;
use std::fmt;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// Where in an input file a problem is. Lines and columns count from 1; 0 = unknown.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Location {
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if self.line > 0 {
            write!(f, ":{}", self.line)?;
            if self.column > 0 {
                write!(f, ":{}", self.column)?;
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    pub severity: Severity,
    /// Stable identifier, e.g. `unknown-key`, `bad-name`.
    pub code: &'static str,
    /// Lower-case sentence saying what is wrong, values in backticks.
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl Diagnostic {
    /// Values quoted in `message` are shown through [`tidy`].
    pub fn error(code: &'static str, message: impl Into<String>) -> Diagnostic {
        Diagnostic { severity: Severity::Error, code, message: tidy(&message.into()), location: None, hint: None }
    }
    pub fn warning(code: &'static str, message: impl Into<String>) -> Diagnostic {
        Diagnostic { severity: Severity::Warning, code, message: tidy(&message.into()), location: None, hint: None }
    }
    pub fn at(mut self, location: Location) -> Diagnostic {
        self.location = Some(location);
        self
    }
    pub fn at_opt(mut self, location: Option<Location>) -> Diagnostic {
        self.location = location;
        self
    }
    pub fn hint(mut self, hint: impl Into<String>) -> Diagnostic {
        self.hint = Some(hint.into());
        self
    }
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Diagnostic {
    /// `path:line:col: error[code]: message` then `  hint: ...`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(loc) = &self.location {
            write!(f, "{loc}: ")?;
        }
        let sev = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(f, "{sev}[{}]: {}", self.code, self.message)?;
        if let Some(h) = &self.hint {
            write!(f, "\n  hint: {h}")?;
        }
        Ok(())
    }
}

/// Characters of an input value shown in a message; the rest is replaced by a count.
pub const SHOWN_CHARS: usize = 80;

/// An input value as it may appear in a message: control characters (terminal escapes,
/// newlines) escaped, and cut after [`SHOWN_CHARS`] characters with the number of bytes left out.
pub fn cut(value: &str) -> String {
    cut_after(value, SHOWN_CHARS)
}

/// [`cut`] after `chars` characters.
pub fn cut_after(value: &str, chars: usize) -> String {
    let mut out = String::new();
    for (n, (i, c)) in value.char_indices().enumerate() {
        if n == chars {
            out.push_str(&format!("... ({} more bytes)", value.len() - i));
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Longest message shown (a backstop; values are already cut by [`tidy`]).
const MESSAGE_CHARS: usize = 2000;

/// A message as shown: every value in backticks passed through [`cut`], control characters
/// escaped everywhere, and the whole cut at a length no screen needs.
pub fn tidy(message: &str) -> String {
    let mut out = String::new();
    for (i, part) in message.split('`').enumerate() {
        if i > 0 {
            out.push('`');
        }
        if i % 2 == 1 {
            out.push_str(&cut(part));
        } else {
            for c in part.chars() {
                if c.is_control() && c != '\n' {
                    out.extend(c.escape_default());
                } else {
                    out.push(c);
                }
            }
        }
    }
    if out.chars().count() > MESSAGE_CHARS {
        let cut_at = out.char_indices().nth(MESSAGE_CHARS).map(|(i, _)| i).unwrap_or(out.len());
        let left = out.len() - cut_at;
        out.truncate(cut_at);
        out.push_str(&format!("... ({left} more bytes)"));
    }
    out
}

/// Sort diagnostics for stable output: by file, line, column, then message.
pub fn sort(diags: &mut [Diagnostic]) {
    diags.sort_by(|a, b| {
        a.location.cmp(&b.location).then_with(|| a.severity.cmp(&b.severity)).then_with(|| a.message.cmp(&b.message))
    });
}

pub fn has_errors(diags: &[Diagnostic]) -> bool {
    diags.iter().any(Diagnostic::is_error)
}

#[cfg(test)]
mod tests {
    #[test]
    fn cut_escapes_and_shortens() {
        assert_eq!(super::cut("a\x1b[31mb\nc"), "a\\u{1b}[31mb\\nc");
        let long = "x".repeat(50_000_000);
        let c = super::cut(&long);
        assert!(c.len() < 120, "{}", c.len());
        assert!(c.ends_with(&format!("({} more bytes)", 50_000_000 - super::SHOWN_CHARS)));
        let d = super::Diagnostic::error("bad-name", format!("invalid account name `{long}`: too long"));
        assert!(d.message.len() < 200 && d.message.ends_with("more bytes)`: too long"), "{}", &d.message[..200]);
    }
}
