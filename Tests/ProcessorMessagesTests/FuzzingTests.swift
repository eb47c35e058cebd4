import Foundation
import Testing

@testable import ProcessorMessages

/// Deterministic input for the fuzz-style tests, so a failure reproduces.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}

/// Fixed seeds and fixed iteration counts (3,000 random, 2,500 mutated inputs: about 2 s in a debug
/// build), so the suite stays well under the repository's 10 s budget and never fuzzes open-ended;
/// long campaigns run under libFuzzer instead (`make fuzz`, docs/testing.md, "Fuzzing").
@Suite("Fuzzing entry point")
struct FuzzingTests {
    static let fixtures = [
        "cnp-authorization-paypage.xml", "litle-sale-applepay.xml", "cnp-register-token-applepay.xml", "litle-register-token-paypage.xml",
        "cnp-authorization-response.xml", "litle-sale-response.xml", "mercurypay-sale-by-recordno.json", "mercurypay-sale-response.json",
        "radial-dw-auth-request.xml", "radial-decrypt-blob-request.xml", "radial-auth-reply.xml",
    ]

    /// Fragments that steer mutations toward the parsers' interesting paths.
    static let tokens: [[UInt8]] =
        [
            "<", ">", "</", "/>", "&", "&amp;", "&#x", "&#", ";", "<!--", "-->", "<![CDATA[", "]]>", "<!DOCTYPE x [", "<!ENTITY",
            "<?", "?>", "xmlns:p=\"urn:p\"", "p:", "\"", "'", "=", "\u{0}", "\u{FEFF}", "{", "}", "[", "]", ":", ",", "\\u", "\\ud800",
            "\"RecordNo\":", "null", "-0.0e", "\u{FFFF}",
        ].map { Array($0.utf8) } + [[0xC0, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xFF], [0x0D]]

    @Test func survivesThousandsOfRandomByteStrings() {
        var generator = SplitMix64(state: 0x5EED_0001)
        for _ in 0..<3_000 {
            let length = Int.random(in: 0...600, using: &generator)
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            ProcessorMessagesFuzzing.run(bytes)
        }
    }

    @Test func survivesMutatedMessages() throws {
        var generator = SplitMix64(state: 0x5EED_0002)
        let seeds = try Self.fixtures.map { try Fixture.bytes($0) }
        for round in 0..<2_500 {
            var bytes = seeds[round % seeds.count]
            for _ in 0..<Int.random(in: 1...8, using: &generator) {
                mutate(&bytes, using: &generator)
            }
            ProcessorMessagesFuzzing.run(bytes)
        }
    }

    @Test func survivesPathologicalShapes() {
        let shapes: [String] = [
            String(repeating: "<a>", count: 20_000),
            String(repeating: "<a/>", count: 20_000),
            "<r " + (0..<5_000).map { "a\($0)=\"\($0)\"" }.joined(separator: " ") + "/>",
            "<r>" + String(repeating: "&amp;", count: 15_000) + "</r>",
            "<r>" + String(repeating: "&#x10FFFF;", count: 6_000) + "</r>",
            String(repeating: "[", count: 50_000),
            String(repeating: "{\"a\":", count: 10_000),
            "\"" + String(repeating: "\\u0041", count: 10_000) + "\"",
            "<r>" + String(repeating: "<!---->", count: 9_000) + "</r>",
            "<" + String(repeating: "a", count: 60_000) + "/>",
            "<r xmlns=\"" + String(repeating: "u", count: 60_000) + "\"/>",
        ]
        let clock = ContinuousClock()
        for shape in shapes {
            let elapsed = clock.measure { ProcessorMessagesFuzzing.run(Array(shape.utf8)) }
            #expect(elapsed < .seconds(2), "\(shape.prefix(20))")
        }
    }

    private func mutate(_ bytes: inout [UInt8], using generator: inout SplitMix64) {
        guard !bytes.isEmpty else {
            bytes = Self.tokens.randomElement(using: &generator) ?? []
            return
        }
        let index = Int.random(in: 0..<bytes.count, using: &generator)
        switch Int.random(in: 0..<6, using: &generator) {
        case 0: bytes[index] ^= UInt8(1) << UInt8.random(in: 0...7, using: &generator)
        case 1: bytes.removeSubrange(index..<min(bytes.count, index + Int.random(in: 1...40, using: &generator)))
        case 2: bytes.insert(contentsOf: Self.tokens.randomElement(using: &generator) ?? [], at: index)
        case 3: bytes = Array(bytes.prefix(index))
        case 4:
            let start = Int.random(in: 0..<bytes.count, using: &generator)
            let slice = bytes[start..<min(bytes.count, start + Int.random(in: 1...200, using: &generator))]
            bytes.insert(contentsOf: slice, at: index)
        default: bytes[index] = UInt8.random(in: 0...255, using: &generator)
        }
    }
}
