import ApplePay
import Foundation
import Testing

struct ReplayCacheTests {
    private func id(_ byte: UInt8) -> [UInt8] { [UInt8](repeating: byte, count: 32) }

    /// A claim is remembered for at least a generation, and until its own expiry however long
    /// that is; only then is its generation dropped.
    @Test func claimsLiveUntilTheirGenerationHasExpired() async {
        let cache = InMemoryReplayCache(generationLength: 600)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        func at(_ seconds: TimeInterval) -> Date { start.addingTimeInterval(seconds) }
        let a = id(1)
        let b = id(2)
        let c = id(3)
        let d = id(4)

        #expect(await cache.claim(a, until: at(300), now: at(0)).isNew)
        #expect(await !cache.claim(a, until: at(310), now: at(10)).isNew, "a replay")
        #expect(await cache.claim(b, until: at(901), now: at(601)).isNew, "first claim of the second generation")
        #expect(await !cache.claim(a, until: at(902), now: at(602)).isNew, "the first generation is still remembered")

        #expect(await cache.claim(c, until: at(1502), now: at(1202)).isNew, "third generation: the first, all expired, is dropped")
        #expect(await cache.claim(a, until: at(1503), now: at(1203)).isNew, "so its id is new again")
        #expect(await !cache.claim(b, until: at(1504), now: at(1204)).isNew)

        #expect(await cache.claim(d, until: at(5000), now: at(1300)).isNew, "a claim that expires late")
        #expect(await cache.claim(id(5), until: at(2102), now: at(1802)).isNew, "rotation: b's generation goes")
        #expect(await !cache.claim(c, until: at(2702), now: at(2402)).isNew, "d has not expired, so its generation stays")
        #expect(await !cache.claim(d, until: at(2703), now: at(2403)).isNew)
        #expect(cache.count == 4)
    }

    @Test func footprintIsAboutEightBytesABucket() async {
        let cache = InMemoryReplayCache()
        #expect(cache.statistics.footprint == 0)
        let now = Date()
        for index in 0..<1000 {
            let id = withUnsafeBytes(of: UInt64(index)) { Array($0) } + [UInt8](repeating: 0, count: 24)
            #expect(await cache.claim(id, until: now.addingTimeInterval(300), now: now).isNew)
        }
        // 1,000 ids need at least 1,334 buckets (at most three quarters full), 2,048 with the
        // standard library's power-of-two sizes: 16 KiB and a bitmap.
        #expect(cache.statistics.count == 1000)
        #expect((1000 * 8...2048 * 8 + 2048 / 8).contains(cache.statistics.footprint))
    }

    @Test func aReleasedClaimCanBeMadeAgain() async {
        let cache = InMemoryReplayCache()
        let now = Date()
        #expect(await cache.claim(id(9), until: now.addingTimeInterval(300), now: now).isNew)
        await cache.release(id(9))
        #expect(cache.count == 0)
        #expect(await cache.claim(id(9), until: now.addingTimeInterval(300), now: now).isNew)
    }
}
