//! HTTP/2 stream resets by error code (RFC 9113 §7): the codes a server resets a stream with
//! (RST_STREAM) each counted apart, the connection-level and unknown ones together.

use super::column::{col, Col};
use serde::{Deserialize, Serialize};

/// The error code of an RST_STREAM from the server, as the counts group it. REFUSED_STREAM is
/// not one: a refused request is sent again (`streams_refused`), not an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResetCode {
    NoError,
    ProtocolError,
    InternalError,
    FlowControlError,
    StreamClosed,
    Cancel,
    EnhanceYourCalm,
    Http11Required,
    /// SETTINGS_TIMEOUT, FRAME_SIZE_ERROR, COMPRESSION_ERROR, CONNECT_ERROR,
    /// INADEQUATE_SECURITY (connection errors a server rarely puts on one stream) and codes
    /// RFC 9113 does not name: run.log names each code once.
    Other,
}

impl ResetCode {
    /// Every group, in the columns' order.
    pub const ALL: [ResetCode; 9] = [
        ResetCode::NoError,
        ResetCode::ProtocolError,
        ResetCode::InternalError,
        ResetCode::FlowControlError,
        ResetCode::StreamClosed,
        ResetCode::Cancel,
        ResetCode::EnhanceYourCalm,
        ResetCode::Http11Required,
        ResetCode::Other,
    ];

    /// The group of the code on the wire.
    pub fn of(code: u32) -> ResetCode {
        match code {
            0x0 => ResetCode::NoError,
            0x1 => ResetCode::ProtocolError,
            0x2 => ResetCode::InternalError,
            0x3 => ResetCode::FlowControlError,
            0x5 => ResetCode::StreamClosed,
            0x8 => ResetCode::Cancel,
            0xb => ResetCode::EnhanceYourCalm,
            0xd => ResetCode::Http11Required,
            _ => ResetCode::Other,
        }
    }

    /// The code's name as RFC 9113 writes it ("other" for the group of the rest).
    pub fn name(self) -> &'static str {
        match self {
            ResetCode::NoError => "NO_ERROR",
            ResetCode::ProtocolError => "PROTOCOL_ERROR",
            ResetCode::InternalError => "INTERNAL_ERROR",
            ResetCode::FlowControlError => "FLOW_CONTROL_ERROR",
            ResetCode::StreamClosed => "STREAM_CLOSED",
            ResetCode::Cancel => "CANCEL",
            ResetCode::EnhanceYourCalm => "ENHANCE_YOUR_CALM",
            ResetCode::Http11Required => "HTTP_1_1_REQUIRED",
            ResetCode::Other => "other codes",
        }
    }

    /// Its time-series column (resets per second).
    pub fn col(self) -> Col {
        match self {
            ResetCode::NoError => col::H2_RESETS_NO_ERROR,
            ResetCode::ProtocolError => col::H2_RESETS_PROTOCOL_ERROR,
            ResetCode::InternalError => col::H2_RESETS_INTERNAL_ERROR,
            ResetCode::FlowControlError => col::H2_RESETS_FLOW_CONTROL_ERROR,
            ResetCode::StreamClosed => col::H2_RESETS_STREAM_CLOSED,
            ResetCode::Cancel => col::H2_RESETS_CANCEL,
            ResetCode::EnhanceYourCalm => col::H2_RESETS_ENHANCE_YOUR_CALM,
            ResetCode::Http11Required => col::H2_RESETS_HTTP_1_1_REQUIRED,
            ResetCode::Other => col::H2_RESETS_OTHER,
        }
    }
}

/// Stream resets counted by [`ResetCode`]; their sum is `Counters::stream_resets`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ResetsByCode {
    pub no_error: u64,
    pub protocol_error: u64,
    pub internal_error: u64,
    pub flow_control_error: u64,
    pub stream_closed: u64,
    pub cancel: u64,
    pub enhance_your_calm: u64,
    pub http_1_1_required: u64,
    pub other: u64,
}

impl ResetsByCode {
    fn slot(&mut self, c: ResetCode) -> &mut u64 {
        match c {
            ResetCode::NoError => &mut self.no_error,
            ResetCode::ProtocolError => &mut self.protocol_error,
            ResetCode::InternalError => &mut self.internal_error,
            ResetCode::FlowControlError => &mut self.flow_control_error,
            ResetCode::StreamClosed => &mut self.stream_closed,
            ResetCode::Cancel => &mut self.cancel,
            ResetCode::EnhanceYourCalm => &mut self.enhance_your_calm,
            ResetCode::Http11Required => &mut self.http_1_1_required,
            ResetCode::Other => &mut self.other,
        }
    }

    /// One reset with the code on the wire.
    pub fn count(&mut self, code: u32) {
        *self.slot(ResetCode::of(code)) += 1;
    }

    /// The resets of one group.
    pub fn get(&self, c: ResetCode) -> u64 {
        let mut me = *self;
        *me.slot(c)
    }

    pub fn add(&mut self, o: &ResetsByCode) {
        for c in ResetCode::ALL {
            *self.slot(c) += o.get(c);
        }
    }

    pub fn total(&self) -> u64 {
        ResetCode::ALL.iter().map(|&c| self.get(c)).sum()
    }

    /// No reset (the worker's report leaves the field out).
    pub fn is_zero(&self) -> bool {
        self.total() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_named_code_has_its_group_and_the_rest_are_other() {
        let mut r = ResetsByCode::default();
        for code in 0..=0xe {
            r.count(code);
        }
        r.count(0xdead);
        for c in ResetCode::ALL {
            let want = match c {
                // SETTINGS_TIMEOUT, FRAME_SIZE, REFUSED_STREAM, COMPRESSION, CONNECT,
                // INADEQUATE_SECURITY, 0xe and 0xdead.
                ResetCode::Other => 8,
                _ => 1,
            };
            assert_eq!(r.get(c), want, "{c:?}");
        }
        assert_eq!(r.total(), 16);
        let mut twice = r;
        twice.add(&r);
        assert_eq!(twice.total(), 32);
    }

    #[test]
    fn columns_are_distinct_and_named_after_the_code() {
        let names: std::collections::BTreeSet<_> =
            ResetCode::ALL.iter().map(|c| c.col().name()).collect();
        assert_eq!(names.len(), ResetCode::ALL.len());
        for c in ResetCode::ALL {
            assert_eq!(c.col().name(), c.summary_col().name());
        }
        assert_eq!(
            ResetCode::of(0xb).col().name(),
            "h2_resets_enhance_your_calm_per_s"
        );
    }
}
