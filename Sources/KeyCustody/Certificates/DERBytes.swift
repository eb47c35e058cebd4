import SwiftASN1
import X509

extension DERSerializable {
    /// This value's DER encoding.
    func derBytes() throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(self)
        return serializer.serializedBytes
    }
}
