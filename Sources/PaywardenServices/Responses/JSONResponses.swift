import Foundation
import NIOCore
import PaywardenPrimitives

/// How responses are encoded: Codable values through one `JSONEncoder`, and, where a payload
/// must go out exactly as it came in (Apple's decrypted `paymentData`), a Codable envelope with
/// the verbatim bytes spliced in as its first member.
public enum JSONResponses {
    /// Sorted keys (the encoder's own order follows a hash table and changes between runs, which
    /// makes responses hard to compare and cache), no escaped slashes (URLs and Base64 stay readable).
    public static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}

extension JSONResponses {
    /// The body of the server's `VerbatimJSONResponse`, for the callers that print it rather than send it.
    public static func splice(key: String, verbatim: [UInt8], envelope: some Encodable) throws -> ByteBuffer {
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
public protocol SelfEncodingEnvelope: Encodable {
    func writeMembers(to writer: inout JSONMemberWriter)
}

/// Writes the members of a JSON object, in the order given, into a buffer.
public struct JSONMemberWriter {
    var buffer: ByteBuffer
    /// Whether no member was written yet (no comma before the next).
    var first = true

    public init(buffer: ByteBuffer, first: Bool = true) {
        self.buffer = buffer
        self.first = first
    }

    public mutating func member(_ name: StaticString, _ value: String) {
        writeName(name)
        var literal: [UInt8] = []
        literal.reserveCapacity(value.utf8.count + 2)
        JSONString.append(value, to: &literal)
        buffer.writeBytes(literal)
    }

    /// A string member, or `null` when nil (the member is written either way).
    public mutating func member(_ name: StaticString, _ value: String?) {
        guard let value else {
            writeName(name)
            buffer.writeStaticString("null")
            return
        }
        member(name, value)
    }

    public mutating func member(_ name: StaticString, _ value: Int) {
        writeName(name)
        buffer.writeString(String(value))
    }

    public mutating func member(_ name: StaticString, _ value: Bool) {
        writeName(name)
        buffer.writeStaticString(value ? "true" : "false")
    }

    /// A member whose value is an object, written by `body`.
    public mutating func object(_ name: StaticString, _ body: (inout JSONMemberWriter) -> Void) {
        writeName(name)
        buffer.writeString("{")
        var inner = JSONMemberWriter(buffer: buffer)
        buffer = ByteBuffer()  // one owner at a time, so the writes below do not copy
        body(&inner)
        buffer = inner.buffer
        buffer.writeString("}")
    }

    /// A member whose value is an array of objects, each written by `body`.
    public mutating func objects<Elements: Sequence>(
        _ name: StaticString, _ elements: Elements, _ body: (inout JSONMemberWriter, Elements.Element) -> Void
    ) {
        writeName(name)
        buffer.writeString("[")
        var separator = false
        for element in elements {
            if separator { buffer.writeString(",") }
            separator = true
            buffer.writeString("{")
            var inner = JSONMemberWriter(buffer: buffer)
            buffer = ByteBuffer()
            body(&inner, element)
            buffer = inner.buffer
            buffer.writeString("}")
        }
        buffer.writeString("]")
    }

    private mutating func writeName(_ name: StaticString) {
        if !first { buffer.writeString(",") }
        first = false
        buffer.writeString("\"")
        buffer.writeStaticString(name)
        buffer.writeString("\":")
    }
}
