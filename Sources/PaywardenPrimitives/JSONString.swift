/// A JSON string literal, written as Foundation's `JSONEncoder` writes one with
/// `.withoutEscapingSlashes`: `"` and `\` escaped, the control characters as `\b \f \n \r \t` or
/// `\u00XX`, everything else as its UTF-8. For the few hot paths that write JSON by hand.
public enum JSONString {
    public static func append(_ value: String, to output: inout [UInt8]) {
        var value = value
        value.withUTF8 { bytes in
            output.reserveCapacity(output.count + bytes.count + 2)
            output.append(UInt8(ascii: "\""))
            // Runs that need no escape (nearly everything) are copied whole.
            var run = 0
            for index in bytes.indices {
                let byte = bytes[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<index]))
                output.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): output.append(byte)
                case 0x08: output.append(UInt8(ascii: "b"))
                case 0x0C: output.append(UInt8(ascii: "f"))
                case 0x0A: output.append(UInt8(ascii: "n"))
                case 0x0D: output.append(UInt8(ascii: "r"))
                case 0x09: output.append(UInt8(ascii: "t"))
                default:
                    output += [
                        UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0x0F)],
                    ]
                }
                run = index + 1
            }
            output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run...]))
            output.append(UInt8(ascii: "\""))
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
}
