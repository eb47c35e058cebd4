import Foundation
import Testing

@testable import ApplePay

@Suite struct BERReaderTests {
    @Test func indefiniteAndDefiniteLengthsNest() throws {
        // SEQUENCE (indefinite) { INTEGER 5, SEQUENCE (definite) { OCTET STRING "ab" } }
        let bytes: [UInt8] = [0x30, 0x80, 0x02, 0x01, 0x05, 0x30, 0x04, 0x04, 0x02, 0x61, 0x62, 0x00, 0x00]
        let root = try BERReader.parse(bytes)
        let children = try root.children(in: bytes)
        #expect(children.count == 2)
        #expect(Array(bytes[children[0].content]) == [5])
        let inner = try children[1].children(in: bytes)
        #expect(try inner[0].octets(in: bytes) == Array("ab".utf8))
        #expect(try root.reencoded(identifier: 0x30, in: bytes) == [0x30, 0x09, 0x02, 0x01, 0x05, 0x30, 0x04, 0x04, 0x02, 0x61, 0x62])
    }

    @Test func constructedOctetStringsJoin() throws {
        let bytes: [UInt8] = [0x24, 0x80, 0x04, 0x01, 0x61, 0x04, 0x02, 0x62, 0x63, 0x00, 0x00]
        #expect(try BERReader.parse(bytes).octets(in: bytes) == Array("abc".utf8))
    }

    @Test(arguments: [
        ([0x30, 0x80, 0x02, 0x01, 0x05] as [UInt8], "end-of-contents"),
        ([0x30, 0x05, 0x02, 0x01], "shorter than its length"),
        ([0x04, 0x84, 0xFF, 0xFF, 0xFF, 0xFF, 0x00], "shorter than its length"),
        ([0x04, 0x85, 1, 1, 1, 1, 1], "not supported"),
        ([0x04, 0x80, 0x00, 0x00], "primitive element cannot have an indefinite length"),
        ([0x1F, 0x81, 0x01, 0x00], "high tag numbers"),
        ([0x02, 0x01, 0x05, 0x00], "follow the outermost element"),
        ([], "an element was expected"),
    ])
    func malformedInputIsRefused(bytes: [UInt8], reason: String) {
        let error = #expect(throws: BERError.self) { try BERReader.parse(bytes) }
        #expect(error?.description.contains(reason) == true, "\(String(describing: error))")
    }

    @Test func nestingIsBounded() {
        let depth = BERReader.maximumDepth + 2
        let bytes = (0..<depth).flatMap { _ in [0x30 as UInt8, 0x80] } + [UInt8](repeating: 0, count: depth * 2)
        #expect(throws: BERError.self) { try BERReader.parse(bytes) }
    }

    @Test func nestedConstructedStringsAreBoundedToo() throws {
        // Definite-length constructed OCTET STRINGs, each holding the next: read lazily, but the
        // depth limit still applies.
        var bytes: [UInt8] = [0x04, 0x01, 0x61]
        for _ in 0..<(BERReader.maximumDepth + 4) { bytes = [0x24] + derLength(bytes.count) + bytes }
        let root = try BERReader.parse(bytes)
        #expect(throws: BERError.self) { try root.octets(in: bytes) }
    }

    @Test(arguments: [0.0, 951_782_400, 1_414_439_503, 4_107_542_399, -86_401])
    func rfc3339MatchesFoundation(seconds: Double) {
        let date = Date(timeIntervalSince1970: seconds)
        #expect(RFC3339.string(from: date) == ISO8601DateFormatter().string(from: date))
    }

    @Test func embeddedRootMatchesTheRepositoryCopyAndItsPin() throws {
        let pem = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Keys/trust/AppleRootCA-G3.pem")
        let text = try String(contentsOf: pem, encoding: .utf8)
        let body = text.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        #expect(Array(try #require(Data(base64Encoded: body))) == AppleRootCA.g3)
        #expect(TrustAnchors.apple.certificates.count == 1)
    }
}
