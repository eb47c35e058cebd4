/// A zip archive of stored (uncompressed) entries (PKWARE APPNOTE 4.3): what Apple asks of a
/// usage-information package is "compress the source into a zip file", and PNG images and a
/// small JSON gain little from deflate. Deterministic: fixed timestamps, entries in the given order.
public enum StoredZip {
    /// The archive of `entries` (path inside the archive, bytes). Paths are UTF-8 (flag bit 11).
    public static func archive(_ entries: [(path: String, bytes: [UInt8])]) -> [UInt8] {
        var output: [UInt8] = []
        var central: [UInt8] = []
        for entry in entries {
            let name = Array(entry.path.utf8)
            let crc = crc32(entry.bytes)
            let offset = UInt32(output.count)
            output += le32(0x0403_4B50) + le16(20) + le16(0x0800) + le16(0) + le16(0) + le16(0x21)
            output += le32(crc) + le32(UInt32(entry.bytes.count)) + le32(UInt32(entry.bytes.count)) + le16(UInt16(name.count)) + le16(0)
            output += name + entry.bytes
            central += le32(0x0201_4B50) + le16(20) + le16(20) + le16(0x0800) + le16(0) + le16(0) + le16(0x21)
            central += le32(crc) + le32(UInt32(entry.bytes.count)) + le32(UInt32(entry.bytes.count)) + le16(UInt16(name.count))
            central += le16(0) + le16(0) + le16(0) + le16(0) + le32(0) + le32(offset) + name
        }
        let centralOffset = UInt32(output.count)
        output += central
        output += le32(0x0605_4B50) + le16(0) + le16(0) + le16(UInt16(entries.count)) + le16(UInt16(entries.count))
        output += le32(UInt32(central.count)) + le32(centralOffset) + le16(0)
        return output
    }

    private static func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
    private static func le32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8((value >> (8 * $0)) & 0xFF) } }

    private static let crcTable: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    /// CRC-32 (ISO 3309, the zip and PNG one).
    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = crcTable[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
}
