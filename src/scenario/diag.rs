//! Scenario errors a person can act on: file, line, column, key path, what is wrong, the line
//! itself with a caret, and the nearest valid key or value when a name is misspelt.

use std::fmt;
use std::ops::Range;

#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
    pub file: String,
    /// 1-based line and column (0 when unknown).
    pub line: usize,
    pub col: usize,
    /// Dotted key path, e.g. `load.burst.ratio` or `step[2].rate`.
    pub key: String,
    pub message: String,
    pub help: Option<String>,
    /// The offending source line and the length of the underlined span.
    pub snippet: Option<(String, usize)>,
}

impl Diagnostic {
    pub fn new(
        file: &str,
        src: &str,
        span: Option<Range<usize>>,
        key: &str,
        message: &str,
    ) -> Self {
        let (line, col, snippet) = match span {
            Some(r) => {
                let (line, col) = line_col(src, r.start);
                let text = src.lines().nth(line - 1).unwrap_or("").to_string();
                let width = src[r.start..r.end.min(src.len())]
                    .lines()
                    .next()
                    .map(|s| s.chars().count())
                    .unwrap_or(1)
                    .max(1);
                (line, col, Some((text, width)))
            }
            None => (0, 0, None),
        };
        let (message, help) = split_help(message);
        Diagnostic {
            file: file.to_string(),
            line,
            col,
            key: key.to_string(),
            message,
            help,
            snippet,
        }
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(src.len());
    let before = &src[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before
        .rsplit('\n')
        .next()
        .map(|l| l.chars().count())
        .unwrap_or(0)
        + 1;
    (line, col)
}

/// Turns serde's "unknown field `x`, expected one of `a`, `b`" (and variants) into a short
/// message plus a "did you mean" help naming the nearest valid choice.
fn split_help(message: &str) -> (String, Option<String>) {
    if let Some((m, h)) = message.split_once("\nhelp: ") {
        return (m.trim().to_string(), Some(h.trim().to_string()));
    }
    let msg = message.trim().replace('\n', "; ");
    for (kind, what) in [("unknown field", "key"), ("unknown variant", "value")] {
        if let Some(rest) = msg.strip_prefix(kind) {
            let bad = between_backticks(rest).unwrap_or_default();
            let expected: Vec<String> = rest
                .split_once("expected")
                .map(|(_, e)| {
                    e.split('`')
                        .enumerate()
                        .filter(|(i, _)| i % 2 == 1)
                        .map(|(_, s)| s.to_string())
                        .collect()
                })
                .unwrap_or_default();
            let short = format!("unknown {what} `{bad}`");
            let help = match nearest(&bad, &expected) {
                Some(n) => format!("did you mean `{n}`? valid: {}", expected.join(", ")),
                None if expected.is_empty() => format!("this {what} is not allowed here"),
                None => format!("valid: {}", expected.join(", ")),
            };
            return (short, Some(help));
        }
    }
    (msg, None)
}

fn between_backticks(s: &str) -> Option<String> {
    let a = s.find('`')?;
    let b = s[a + 1..].find('`')?;
    Some(s[a + 1..a + 1 + b].to_string())
}

/// The closest candidate to a misspelt name, if any is close enough to be a likely typo.
pub fn nearest<'a>(bad: &str, candidates: &'a [String]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| {
            // A shortened or lengthened name (`arch` for `architecture`) is a likely intent too.
            let prefix = c.len() >= 3
                && bad.len() >= 3
                && (bad.starts_with(c.as_str()) || c.starts_with(bad));
            let d = strsim::damerau_levenshtein(bad, c);
            (if prefix { d.min(1) } else { d }, c)
        })
        // Two edits turn any short name into another (`wat` into `gate`): one for those.
        .filter(|(d, c)| {
            *d <= if c.len().min(bad.len()) <= 4 {
                1
            } else {
                2.max(c.len() / 3)
            }
        })
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c.as_str())
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}:{}", self.file, self.line, self.col)?;
        } else {
            write!(f, "{}", self.file)?;
        }
        if !self.key.is_empty() {
            write!(f, ": `{}`", self.key)?;
        }
        write!(f, ": {}", self.message)?;
        if let Some((text, width)) = &self.snippet {
            let n = self.line.to_string();
            let pad = " ".repeat(n.len());
            write!(
                f,
                "\n {pad} |\n {n} | {text}\n {pad} | {}{}",
                " ".repeat(self.col - 1),
                "^".repeat(*width)
            )?;
        }
        if let Some(h) = &self.help {
            write!(f, "\n  help: {h}")?;
        }
        Ok(())
    }
}

/// All the problems found in one scenario file.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioError(pub Vec<Diagnostic>);

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ScenarioError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_are_one_based() {
        assert_eq!(line_col("a\nbc\n", 3), (2, 2));
        assert_eq!(line_col("abc", 0), (1, 1));
    }

    #[test]
    fn unknown_field_suggests_nearest() {
        let (m, h) = split_help("unknown field `rat`, expected one of `rate`, `mode`");
        assert_eq!(m, "unknown key `rat`");
        assert!(h.unwrap().starts_with("did you mean `rate`?"));
        let (_, h) = split_help("unknown variant `sclinet`, expected one of `sclient`, `open`");
        assert!(h.unwrap().contains("`sclient`"));
        let (_, h) = split_help("unknown field `zzzzzz`, expected `rate`");
        assert!(h.unwrap().starts_with("valid: rate"));
    }
}
