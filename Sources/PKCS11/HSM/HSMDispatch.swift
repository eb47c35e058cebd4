import Foundation

/// Where the HSM's calls run.
///
/// A module in our own process (SoftHSM, NSS softokn) answers in the time its arithmetic takes:
/// running the call on the caller's thread costs less than handing it to a worker and waking the
/// caller again, two thread hops on cores shared with everything else. A module across a network
/// waits on the network for each call: those calls belong on the worker threads, where a caller
/// can be given up on at its deadline and the callers' threads stay free.
public enum HSMDispatch: String, Sendable, Hashable, CaseIterable {
    /// Inline when the module's fastest round trip, measured when the HSM is opened, is within
    /// ``HSMConfiguration/inlineThreshold``; the worker pool otherwise.
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
    /// The module's fastest round trip of ``samples``: what `auto` compares with the threshold.
    public let roundTrip: Duration
    /// The threshold `auto` compared it with.
    public let threshold: Duration
    /// Every round trip measured at open (`C_GenerateRandom` of 16 bytes, or `C_GetSessionInfo`
    /// when the token has no generator), fastest first.
    public let samples: [Duration]

    /// One line for operators: the choice and its reason.
    public var summary: String {
        let median = samples.isEmpty ? roundTrip : samples[samples.count / 2]
        let measured =
            "the module's fastest round trip of \(samples.count) took \(Self.microseconds(roundTrip)), "
            + "the median \(Self.microseconds(median))"
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
    public var sampleMicroseconds: [Double] { samples.map(Self.microsecondValue) }

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
    ///
    /// The choice must not flip between starts of one module, so it rests on the fastest of 15
    /// round trips, not their median: a busy machine only ever slows a call down, so the fastest is
    /// the module's own cost, steady from start to start (a median of 9 through p11-kit's socket
    /// ranged from 17 to 52 µs). And the default threshold, 10 µs, lies about twice as far from
    /// either kind of module as its fastest round trip strays: one in our process answered in 1 µs,
    /// and 4.8 µs at worst on a loaded machine; one behind a socket (p11-kit's client) in no less
    /// than 17 µs in any measurement (the fastest of 15 was 27–41 µs across starts here): two
    /// context switches and the transport's encoding.
    init(configuration: HSMConfiguration, session: Session) {
        let samples = Self.roundTrips(session)
        let roundTrip = samples.first ?? .zero
        let chosen: HSMDispatch =
            switch configuration.dispatch {
            case .auto: roundTrip <= configuration.inlineThreshold ? .inline : .pool
            case .inline, .pool: configuration.dispatch
            }
        self.init(
            configured: configuration.dispatch, chosen: chosen, roundTrip: roundTrip, threshold: configuration.inlineThreshold,
            samples: samples)
    }

    /// 15 round trips, fastest first. `C_GenerateRandom` must reach the device's generator,
    /// where a client library might answer a session query from what it remembers.
    private static func roundTrips(_ session: Session) -> [Duration] {
        let clock = ContinuousClock()
        let random = (try? session.generateRandom(16)) != nil
        let times = (0..<15).map { _ in
            clock.measure {
                if random { _ = try? session.generateRandom(16) } else { _ = session.isLoggedIn }
            }
        }
        return times.sorted()
    }
}
