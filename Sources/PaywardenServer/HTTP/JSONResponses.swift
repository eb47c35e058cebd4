import Foundation
import Hummingbird
import NIOCore
import PaywardenPrimitives

/// How responses are encoded: Codable values through one `JSONEncoder`, and, where a payload
/// must go out exactly as it came in (Apple's decrypted `paymentData`), a Codable envelope with
/// the verbatim bytes spliced in as its first member.
enum JSONResponses {
    /// Sorted keys (the encoder's own order follows a hash table and changes between runs, which
    /// makes responses hard to compare and cache), no escaped slashes (URLs and Base64 stay readable).
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}

/// `{"<key>":<verbatim JSON>, …the envelope's members…}`: no field of the verbatim payload is
/// dropped, reordered or re-encoded (a number keeps its spelling), and the rest is Codable.
struct VerbatimJSONResponse<Envelope: Encodable & Sendable>: ResponseGenerator {
    let key: String
    let verbatim: [UInt8]
    let envelope: Envelope
    var status: HTTPResponse.Status = .ok

    func response(from request: Request, context: some RequestContext) throws -> Response {
        let body = try JSONResponses.splice(key: key, verbatim: verbatim, envelope: envelope)
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: body))
    }
}

extension JSONResponses {
    /// The body of a ``VerbatimJSONResponse``, for the callers that print it rather than send it.
    static func splice(key: String, verbatim: [UInt8], envelope: some Encodable) throws -> ByteBuffer {
        var writer = JSONMemberWriter(buffer: ByteBuffer(), first: false)
        writer.buffer.reserveCapacity(verbatim.count + key.utf8.count + 384)
        writer.buffer.writeString("{\"\(key)\":")
        writer.buffer.writeBytes(verbatim)
        if let envelope = envelope as? any SelfEncodingEnvelope {
            envelope.writeMembers(to: &writer)
            writer.buffer.writeString("}")
            return writer.buffer
        }
        // The envelope is an object: `{}` adds nothing, `{…}` adds its members after a comma.
        let members = try encoder.encode(envelope)
        if members.count > 2 {
            writer.buffer.writeString(",")
            writer.buffer.writeBytes(members.dropFirst())
        } else {
            writer.buffer.writeString("}")
        }
        return writer.buffer
    }
}

/// An envelope on a hot path that writes its own members, exactly as ``JSONResponses/encoder``
/// would (sorted names, the same escaping): `JSONEncoder` cost about 12 µs per decrypt response
/// on Linux (docs/operations.md, "Performance"). Tests hold the two encodings to the same bytes.
protocol SelfEncodingEnvelope: Encodable {
    func writeMembers(to writer: inout JSONMemberWriter)
}

/// Writes the members of a JSON object, in the order given, into a buffer.
struct JSONMemberWriter {
    var buffer: ByteBuffer
    /// Whether no member was written yet (no comma before the next).
    var first = true

    mutating func member(_ name: StaticString, _ value: String) {
        writeName(name)
        var literal: [UInt8] = []
        literal.reserveCapacity(value.utf8.count + 2)
        JSONString.append(value, to: &literal)
        buffer.writeBytes(literal)
    }

    /// A string member, or `null` when nil (the member is written either way).
    mutating func member(_ name: StaticString, _ value: String?) {
        guard let value else {
            writeName(name)
            buffer.writeStaticString("null")
            return
        }
        member(name, value)
    }

    mutating func member(_ name: StaticString, _ value: Int) {
        writeName(name)
        buffer.writeString(String(value))
    }

    mutating func member(_ name: StaticString, _ value: Bool) {
        writeName(name)
        buffer.writeStaticString(value ? "true" : "false")
    }

    /// A member whose value is an object, written by `body`.
    mutating func object(_ name: StaticString, _ body: (inout JSONMemberWriter) -> Void) {
        writeName(name)
        buffer.writeString("{")
        var inner = JSONMemberWriter(buffer: buffer)
        buffer = ByteBuffer()  // one owner at a time, so the writes below do not copy
        body(&inner)
        buffer = inner.buffer
        buffer.writeString("}")
    }

    private mutating func writeName(_ name: StaticString) {
        if !first { buffer.writeString(",") }
        first = false
        buffer.writeString("\"")
        buffer.writeStaticString(name)
        buffer.writeString("\":")
    }
}
