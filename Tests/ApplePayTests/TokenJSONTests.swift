import Foundation
import Testing

@testable import ApplePay

/// The token's JSON reader against RFC 8259 and against Foundation's `JSONSerialization`, which
/// it replaced: on every token of the committed fuzz corpus both agree on whether the document
/// is a JSON object and on every member the token reads, except where the reader is stricter on
/// purpose (a repeated member name, a trailing comma, nesting past 64 levels, anything but UTF-8,
/// a byte order mark).
@Suite("Token JSON reader")
struct TokenJSONTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz/corpus/token")

    static func read(_ text: String) -> Result<TokenJSON.Object, TokenJSON.SyntaxError> {
        Result { () throws(TokenJSON.SyntaxError) in try TokenJSON.object(Array(text.utf8)) }
    }

    static func string(_ value: TokenJSON.Value?) -> String? {
        guard case .string(let bytes)? = value else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test(arguments: [
        #"{}"#, #" {"a":1} "#, "\t{\r\n\"a\" : [ ] , \"b\":{ }}\n", #"{"a":[1,-0,0.5,1e9,-2.5E-3,true,false,null,"x",[{}]]}"#,
        #"{"a":"\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"}"#, #"{"é":"ü"}"#,
    ])
    func acceptsJSON(_ text: String) throws {
        let object = try Self.read(text).get()
        let reference = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(object.members.count == reference.count)
    }

    @Test(arguments: [
        "", "[]", "\"a\"", "1", "{", "{\"a\"}", "{\"a\":}", "{,}", "{\"a\":1}x", "{\"a\":1}{}", "{\"a\":01}",
        "{\"a\":1.}", "{\"a\":.5}", "{\"a\":-}", "{\"a\":1e}", "{\"a\":+1}", "{\"a\":tru}", "{\"a\":nul}",
        "{\"a\":\"x}", "{\"a\":\"\\x\"}", "{\"a\":\"\\u12\"}", "{\"a\":\"\\ud83d\"}", "{\"a\":\"\\ude00\"}", "{\"a\":\"\u{01}\"}",
        "{'a':1}", "{a:1}", "{\"a\":NaN}", "{\"a\":Infinity}",
    ])
    func refusesWhatIsNotJSON(_ text: String) {
        #expect(throws: TokenJSON.SyntaxError.self) { try TokenJSON.object(Array(text.utf8)) }
        #expect((try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]) == nil, "Foundation accepts \(text)")
    }

    @Test func escapesDecode() throws {
        let object = try Self.read(#"{"data":"ab\/cd\u002B==","k\u0065y":"\ud83d\ude00"}"#).get()
        #expect(Self.string(object["data"]) == "ab/cd+==")
        #expect(Self.string(object["key"]) == "😀")
    }

    /// Past the members compared one by one, names are hashed: a repeat is still found wherever it
    /// is, and an object the size of a whole token (8,000 members) is read, every member kept.
    @Test(arguments: [1, 15, 16, 17, 8_000])
    func aRepeatedNameIsFoundInObjectsOfAnySize(_ count: Int) throws {
        let members = (0..<count).map { "\"m\($0)\":\($0)" }
        let object = try Self.read("{" + members.joined(separator: ",") + "}").get()
        #expect(object.members.count == count)
        for repeated in Set([0, count / 2, count - 1]) {
            let text = "{" + (members + ["\"m\(repeated)\":0"]).joined(separator: ",") + "}"
            #expect(throws: TokenJSON.SyntaxError.self, "m\(repeated) of \(count)") { try TokenJSON.object(Array(text.utf8)) }
        }
    }

    @Test func stricterThanFoundationOnPurpose() throws {
        // A repeated name: JSONSerialization keeps one of them silently.
        #expect(throws: TokenJSON.SyntaxError.self) { try TokenJSON.object(Array(#"{"data":"a","data":"b"}"#.utf8)) }
        // Nesting past the limit.
        let deep = String(repeating: "[", count: 70) + String(repeating: "]", count: 70)
        #expect(throws: TokenJSON.SyntaxError.self) { try TokenJSON.object(Array("{\"a\":\(deep)}".utf8)) }
        // UTF-16 (which JSONSerialization detects) and malformed UTF-8.
        let utf16 = Array("{\"a\":1}".data(using: .utf16LittleEndian)!)
        #expect(throws: TokenJSON.SyntaxError.self) { try TokenJSON.object(utf16) }
        #expect(throws: TokenJSON.SyntaxError.self) { try TokenJSON.object([0x7B, 0x22, 0xC3, 0x22, 0x3A, 0x31, 0x7D]) }
        // Trailing commas, which JSONSerialization lets through.
        for text in [#"{"a":1,}"#, #"{"a":[1,]}"#, #"{"a":1 , }"#] {
            #expect(throws: TokenJSON.SyntaxError.self) { try TokenJSON.object(Array(text.utf8)) }
        }
        // Nested just under the limit is fine.
        let nested = String(repeating: "[", count: 62) + String(repeating: "]", count: 62)
        #expect(throws: Never.self) { try TokenJSON.object(Array("{\"a\":\(nested)}".utf8)) }
    }

    @Test func syntaxErrorsSayWhereAndTheTokenSaysNotAnObject() {
        #expect(throws: PaymentTokenError.self) { try PaymentToken(json: Array(#"{"version":"EC_v1",}"#.utf8)) }
        do {
            _ = try PaymentToken(json: Array(#"{"version":"EC_v1",}"#.utf8))
        } catch {
            #expect(error.code == .malformedToken)
            #expect(error.message.contains("not a JSON object") && error.message.contains("at byte 19"), "\(error.message)")
        }
    }

    /// Every corpus token: the reader and JSONSerialization agree on the document and on the
    /// members the token reads, at the root, in paymentData and in header.
    @Test func agreesWithFoundationOnTheCorpus() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.corpus.path).filter { !$0.hasPrefix(".") }
        #expect(files.count > 100, "Fuzz/corpus/token has \(files.count) inputs")
        var objects = 0
        var stricter = 0
        for name in files {
            let bytes = Array(try Data(contentsOf: Self.corpus.appendingPathComponent(name)))
            let reference = (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any]
            switch Result(catching: { () throws(TokenJSON.SyntaxError) in try TokenJSON.object(bytes) }) {
            case .success(let object):
                let reference = try #require(reference, "\(name): only the reader accepts it")
                objects += 1
                compare(object, reference, name)
            case .failure(let error):
                guard let reference else { continue }
                // Foundation accepted it: only the deliberate refusals may differ.
                let deliberate = ["appears twice", "nested deeper", "not UTF-8", "byte order mark", "trailing comma"].contains {
                    error.reason.contains($0)
                }
                #expect(
                    deliberate || Self.isOtherEncoding(bytes), "\(name): refused (\(error.reason)) but Foundation reads \(reference.keys)")
                stricter += 1
            }
        }
        #expect(objects > 50, "only \(objects) corpus inputs are JSON objects")
        #expect(stricter < files.count / 10, "\(stricter) inputs refused that Foundation reads")
    }

    /// UTF-16 or UTF-32 (which have NULs in JSON), a byte order mark, or not UTF-8 at all:
    /// Foundation detects and converts these; the reader refuses them.
    static func isOtherEncoding(_ bytes: [UInt8]) -> Bool {
        bytes.contains(0) || [[0xEF, 0xBB, 0xBF], [0xFE, 0xFF], [0xFF, 0xFE]].contains { bytes.starts(with: $0) }
            || String(validating: bytes, as: UTF8.self) == nil
    }

    private func compare(_ object: TokenJSON.Object, _ reference: [String: Any], _ name: String, depth: Int = 0) {
        #expect(object.members.count == reference.count, "\(name): \(object.members.count) members, Foundation \(reference.count)")
        for (memberName, value) in object.members {
            let key = String(decoding: memberName, as: UTF8.self)
            switch value {
            case .string(let bytes):
                #expect(reference[key] as? String == String(decoding: bytes, as: UTF8.self), "\(name): member \(key)")
            case .object(let inner):
                guard let innerReference = reference[key] as? [String: Any] else {
                    Issue.record("\(name): member \(key) is an object only for the reader")
                    continue
                }
                if depth < 3 { compare(inner, innerReference, name, depth: depth + 1) }
            case .number, .array, .bool, .null:
                #expect(reference[key] != nil && !(reference[key] is String), "\(name): member \(key)")
            }
        }
    }
}
