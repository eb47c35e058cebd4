import Foundation
import Synchronization

/// Token buckets by key (a `paypageId`, a client address): `rate` requests a second with bursts
/// of `burst`. Memory is bounded: past `maximumKeys` buckets, the full ones (idle keys) are
/// dropped first, and if every bucket is in use the limiter refuses new keys until some refill,
/// rather than growing without bound under a flood of addresses.
public final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    let rate: Double
    let burst: Double
    let maximumKeys: Int
    private let buckets = Mutex<[String: Bucket]>([:])

    public init(ratePerSecond: Int, burst: Int? = nil, maximumKeys: Int = 100_000) {
        self.rate = Double(ratePerSecond)
        self.burst = Double(burst ?? ratePerSecond * 2)
        self.maximumKeys = maximumKeys
    }

    /// Takes one request's token for `key`: nil when allowed, else how long until one is available.
    public func acquire(_ key: String, now: ContinuousClock.Instant = .now) -> Duration? {
        buckets.withLock { buckets in
            var bucket = refilled(buckets[key], now: now)
            guard bucket.tokens >= 1 else {
                buckets[key] = bucket
                return waitForOne(bucket.tokens)
            }
            if buckets[key] == nil, buckets.count >= maximumKeys {
                Self.dropIdle(&buckets, burst: burst, rate: rate, now: now)
                guard buckets.count < maximumKeys else { return .seconds(1) }
            }
            bucket.tokens -= 1
            buckets[key] = bucket
            return nil
        }
    }

    /// How long until `key` has a token, without taking one: nil when one is there now. For a
    /// limit charged only once the request proved worth counting (see ``acquire(_:now:)``).
    public func wait(_ key: String, now: ContinuousClock.Instant = .now) -> Duration? {
        buckets.withLock { buckets in
            guard let bucket = buckets[key] else { return nil }
            let tokens = refilled(bucket, now: now).tokens
            return tokens >= 1 ? nil : waitForOne(tokens)
        }
    }

    /// Takes one token for `key` whatever the bucket holds, down to one burst in debt: for a limit
    /// looked at first (``wait(_:now:)``) and charged once the request proved worth counting, where
    /// requests that passed the look together must all be paid for, and the debt delays the next.
    /// Its keys are ones the caller knows to exist (a paypage), so they do not count against
    /// `maximumKeys`.
    public func charge(_ key: String, now: ContinuousClock.Instant = .now) {
        buckets.withLock { buckets in
            var bucket = refilled(buckets[key], now: now)
            bucket.tokens = max(-burst, bucket.tokens - 1)
            buckets[key] = bucket
        }
    }

    /// `bucket` (a full one when the key has none) with what it gained since it was last updated.
    private func refilled(_ bucket: Bucket?, now: ContinuousClock.Instant) -> Bucket {
        guard let bucket else { return Bucket(tokens: burst, updated: now) }
        return Bucket(tokens: min(burst, bucket.tokens + rate * ((now - bucket.updated) / .seconds(1))), updated: now)
    }

    /// How long until a bucket holding `tokens` (fewer than one) has one.
    private func waitForOne(_ tokens: Double) -> Duration { .seconds((1 - tokens) / rate) }

    private static func dropIdle(_ buckets: inout [String: Bucket], burst: Double, rate: Double, now: ContinuousClock.Instant) {
        buckets = buckets.filter { $0.value.tokens + rate * ((now - $0.value.updated) / .seconds(1)) < burst }
    }
}
