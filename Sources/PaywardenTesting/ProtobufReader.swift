/// The protobuf wire format, read just far enough to walk a message's fields (for
/// ``ExportedSpan``): varints, fixed 32- and 64-bit values and length-delimited bytes.
enum ProtobufReader {
    enum Value: Hashable {
        case varint(UInt64)
        case fixed64(UInt64)
        case fixed32(UInt32)
        case bytes([UInt8])
    }

    struct Field: Hashable {
        let number: Int
        let value: Value
    }

    struct Malformed: Error, CustomStringConvertible {
        let reason: String
        var description: String { "malformed protobuf: \(reason)" }
    }

    /// Every field of `bytes`, in order.
    static func fields(_ bytes: [UInt8]) throws -> [Field] {
        var fields: [Field] = []
        var index = 0
        while index < bytes.count {
            let tag = try varint(bytes, &index)
            let number = Int(tag >> 3)
            switch tag & 7 {
            case 0: fields.append(Field(number: number, value: .varint(try varint(bytes, &index))))
            case 1:
                guard index + 8 <= bytes.count else { throw Malformed(reason: "a fixed64 runs past the end") }
                let value = bytes[index..<index + 8].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                fields.append(Field(number: number, value: .fixed64(value)))
                index += 8
            case 2:
                let length = Int(try varint(bytes, &index))
                guard length >= 0, index + length <= bytes.count else { throw Malformed(reason: "a length runs past the end") }
                fields.append(Field(number: number, value: .bytes(Array(bytes[index..<index + length]))))
                index += length
            case 5:
                guard index + 4 <= bytes.count else { throw Malformed(reason: "a fixed32 runs past the end") }
                let value = bytes[index..<index + 4].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                fields.append(Field(number: number, value: .fixed32(value)))
                index += 4
            default: throw Malformed(reason: "wire type \(tag & 7)")
            }
        }
        return fields
    }

    /// The length-delimited fields numbered `number`: the embedded messages of a repeated field.
    static func messages(_ number: Int, in bytes: [UInt8]) throws -> [[UInt8]] {
        try fields(bytes).compactMap { field in
            guard field.number == number, case .bytes(let value) = field.value else { return nil }
            return value
        }
    }

    private static func varint(_ bytes: [UInt8], _ index: inout Int) throws -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while index < bytes.count, shift < 64 {
            let byte = bytes[index]
            index += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
        throw Malformed(reason: "a varint runs past the end")
    }
}
