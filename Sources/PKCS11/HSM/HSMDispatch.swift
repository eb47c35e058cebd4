import Foundation

/// Where the HSM's calls run.
///
/// A module in our own process (SoftHSM, NSS softokn) answers in the time its arithmetic takes:
/// running the call on the caller's thread costs less than handing it to a worker and waking the
/// caller again, two thread hops on cores shared with everything else. A module across a network
/// waits on the network for each call: those calls belong on the worker threads, where a caller
/// can be given up on at its deadline and the callers' threads stay free.
public enum HSMDispatch: String, Sendable, Hashable, CaseIterable {
    /// Inline when the module answers a round trip within ``HSMConfiguration/inlineThreshold``
    /// (measured when the HSM is opened), the worker pool otherwise.
    case auto
    /// Every call on the calling thread, with a session of that thread's own.
    case inline
    /// Every call on the worker threads.
    case pool
}

/// How the HSM chose its dispatch when it was opened, and why.
public struct HSMDispatchChoice: Sendable, Hashable {
    /// What was configured.
    public let configured: HSMDispatch
    /// What was chosen: ``HSMDispatch/inline`` or ``HSMDispatch/pool``.
    public let chosen: HSMDispatch
    /// The module's median round trip (`C_GenerateRandom` of 16 bytes, or `C_GetSessionInfo`
    /// when the token has no generator), measured at open.
    public let roundTrip: Duration
    /// The threshold `auto` compared it with.
    public let threshold: Duration

    /// One line for operators: the choice and its reason.
    public var summary: String {
        let measured = "the module answers a round trip in \(Self.microseconds(roundTrip))"
        switch configured {
        case .auto:
            let comparison = chosen == .inline ? "within" : "over"
            return "\(chosen.rawValue) (auto: \(measured), \(comparison) \(Self.microseconds(threshold)))"
        case .inline, .pool:
            return "\(chosen.rawValue) (configured; \(measured))"
        }
    }

    /// ``roundTrip`` and ``threshold`` in microseconds, for reports.
    public var roundTripMicroseconds: Double { Self.microsecondValue(roundTrip) }
    public var thresholdMicroseconds: Double { Self.microsecondValue(threshold) }

    static func microseconds(_ duration: Duration) -> String {
        let value = microsecondValue(duration)
        return value < 10 ? String(format: "%.1f µs", value) : "\(Int(value.rounded())) µs"
    }

    private static func microsecondValue(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1e6 + Double(duration.components.attoseconds) / 1e12
    }
}

extension HSMDispatchChoice {
    /// Times the module's round trip on `session` and chooses (see ``HSMDispatch/auto``).
    init(configuration: HSMConfiguration, session: Session) {
        let roundTrip = Self.medianRoundTrip(session)
        let chosen: HSMDispatch =
            switch configuration.dispatch {
            case .auto: roundTrip <= configuration.inlineThreshold ? .inline : .pool
            case .inline, .pool: configuration.dispatch
            }
        self.init(configured: configuration.dispatch, chosen: chosen, roundTrip: roundTrip, threshold: configuration.inlineThreshold)
    }

    /// The median of 9 round trips. `C_GenerateRandom` must reach the device's generator, where
    /// a client library might answer a session query from what it remembers.
    private static func medianRoundTrip(_ session: Session) -> Duration {
        let clock = ContinuousClock()
        let random = (try? session.generateRandom(16)) != nil
        let times = (0..<9).map { _ in
            clock.measure {
                if random { _ = try? session.generateRandom(16) } else { _ = session.isLoggedIn }
            }
        }
        return times.sorted()[times.count / 2]
    }
}
