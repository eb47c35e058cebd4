/// The parts of a detached CMS SignedData (RFC 5652) that payment-token verification needs,
/// read from BER.
struct SignedData: Sendable {
    /// Each certificate's DER, in the order the (unsorted) SET holds them.
    let certificates: [[UInt8]]
    let signers: [SignerInfo]

    init(ber bytes: [UInt8]) throws(BERError) {
        let contentInfo = try BERReader.parse(bytes)
        guard contentInfo.isUniversal(BERNode.sequence) else { throw BERError("not a CMS ContentInfo") }
        let info = try contentInfo.children(in: bytes)
        guard info.count == 2, info[0].isUniversal(BERNode.objectIdentifier),
            Array(bytes[info[0].content]) == CMSObjectIdentifier.signedData
        else {
            throw BERError("the CMS content is not SignedData")
        }
        let explicit = try info[1].children(in: bytes)
        guard info[1].isContext(0), explicit.count == 1, explicit[0].isUniversal(BERNode.sequence) else {
            throw BERError("the SignedData is not [0] EXPLICIT SEQUENCE")
        }
        let fields = try explicit[0].children(in: bytes)
        guard fields.count >= 4, fields[0].isUniversal(BERNode.integer), fields[1].isUniversal(BERNode.set) else {
            throw BERError("the SignedData lacks its version or digest algorithms")
        }
        let encapsulated = try fields[2].children(in: bytes)
        guard fields[2].isUniversal(BERNode.sequence), let eContentType = encapsulated.first,
            eContentType.isUniversal(BERNode.objectIdentifier), Array(bytes[eContentType.content]) == CMSObjectIdentifier.data
        else { throw BERError("the encapsulated content type is not id-data") }
        guard encapsulated.count == 1 else { throw BERError("the signature is not detached: it carries its own content") }

        var index = 3
        var certificates: [[UInt8]] = []
        if fields[index].isContext(0) {
            for certificate in try fields[index].children(in: bytes) {
                guard certificate.isUniversal(BERNode.sequence) else { throw BERError("a certificate is not a SEQUENCE") }
                certificates.append(Array(bytes[certificate.encoded]))
            }
            index += 1
        }
        if index < fields.count, fields[index].isContext(1) { index += 1 }  // CRLs: Apple sends none; ignored
        guard index == fields.count - 1, fields[index].isUniversal(BERNode.set) else {
            throw BERError("the signer infos are missing or followed by unexpected elements")
        }
        self.certificates = certificates
        var signers: [SignerInfo] = []
        for signer in try fields[index].children(in: bytes) { signers.append(try SignerInfo(signer, in: bytes)) }
        self.signers = signers
    }
}
