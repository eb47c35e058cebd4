/// `DecryptBlobRequest` (seed 003, docs/processors.md, "Radial"): `AlgorithmVersion`, `EncryptionHeader`
/// {`EphemeralPublicKey`, `TransactionId`, `PublicKeyHash`}, `Version`, `Data`, `Signature`.
///
/// Radial publishes no schema for it, so the order of the children is not enforced; each must be
/// present once, and nothing else is accepted in Radial's namespace.
public struct RadialDecryptBlobRequest: Sendable, Hashable {
    public var algorithmVersion: String
    public var blob: RadialApplePayBlob

    static let children: Set<String> = ["AlgorithmVersion", "EncryptionHeader", "Version", "Data", "Signature"]
    static let headerChildren: Set<String> = ["EphemeralPublicKey", "TransactionId", "PublicKeyHash"]

    public static func parse(
        _ bytes: [UInt8], limits: ProcessorXML.Limits = .default
    ) throws(ProcessorMessageError) -> RadialDecryptBlobRequest {
        let reader = RadialSchema.reader
        let root = try reader.parse(bytes, limits: limits).root
        guard root.name.matches("DecryptBlobRequest", namespaceURI: RadialSchema.namespaceURI) else {
            throw ProcessorMessageError(
                .radial, .unexpectedRoot, field: root.name.localName,
                "the root element must be DecryptBlobRequest in \(RadialSchema.namespaceURI)")
        }
        let path = "DecryptBlobRequest"
        try onlyKnown(root, children, path: path)
        let header = try reader.requiredChild(root, "EncryptionHeader", path: path)
        let headerPath = "\(path)/EncryptionHeader"
        try onlyKnown(header, headerChildren, path: headerPath)
        let algorithm = try reader.requiredValue(root, "AlgorithmVersion", path: path, max: 32)
        let blob = try RadialApplePayBlob.radial(
            header: header, headerPath: headerPath, transactionIdName: "TransactionId", body: root, bodyPath: path)
        try RadialApplePayBlob.checkRadialBase64(blob.data, "\(path)/Data")
        try RadialApplePayBlob.checkRadialBase64(blob.signature, "\(path)/Signature")
        return RadialDecryptBlobRequest(algorithmVersion: algorithm, blob: blob)
    }

    /// Every child in Radial's namespace must be one of `known`, and appear once.
    static func onlyKnown(_ element: ProcessorXML.Element, _ known: Set<String>, path: String) throws(ProcessorMessageError) {
        let reader = RadialSchema.reader
        var seen: Set<String> = []
        for child in try reader.elements(of: element, path: path, allowForeign: true) {
            let name = child.name.localName
            guard known.contains(name) else { throw reader.rules.unexpected("\(path)/\(name)", in: path) }
            guard seen.insert(name).inserted else { throw reader.rules.duplicate("\(path)/\(name)") }
        }
    }
}
