/// The parts of a detached CMS SignedData (RFC 5652) that payment-token verification needs,
/// read from BER.
struct SignedData: Sendable {
    /// Each certificate's DER, in the order the (unsorted) SET holds them.
    let certificates: [[UInt8]]
    let signers: [SignerInfo]

    init(ber bytes: [UInt8]) throws(BERError) {
        let contentInfo = try BERReader.parse(bytes)
        guard contentInfo.isUniversal(BERNode.sequence) else { throw BERError("not a CMS ContentInfo") }
        let type = try contentInfo.child(0, "the content type")
        guard type.isUniversal(BERNode.objectIdentifier), Array(bytes[type.content]) == CMSObjectIdentifier.signedData else {
            throw BERError("the CMS content is not SignedData")
        }
        let explicit = try contentInfo.child(1, "the SignedData")
        guard explicit.isContext(0), explicit.children.count == 1 else { throw BERError("the SignedData is not [0] EXPLICIT") }
        let signedData = explicit.children[0]
        guard signedData.isUniversal(BERNode.sequence) else { throw BERError("the SignedData is not a SEQUENCE") }

        var index = 1  // version
        guard try signedData.child(0, "the SignedData version").isUniversal(BERNode.integer) else { throw BERError("bad SignedData version") }
        guard try signedData.child(index, "the digest algorithms").isUniversal(BERNode.set) else { throw BERError("bad digest algorithms") }
        index += 1
        let encapsulated = try signedData.child(index, "the encapsulated content")
        index += 1
        guard encapsulated.isUniversal(BERNode.sequence),
              let eContentType = encapsulated.children.first, eContentType.isUniversal(BERNode.objectIdentifier),
              Array(bytes[eContentType.content]) == CMSObjectIdentifier.data
        else { throw BERError("the encapsulated content type is not id-data") }
        guard encapsulated.children.count == 1 else {
            throw BERError("the signature is not detached: it carries its own content")
        }

        var certificates: [[UInt8]] = []
        var node = try signedData.child(index, "the signer infos")
        if node.isContext(0) {
            for certificate in node.children {
                guard certificate.isUniversal(BERNode.sequence) else { throw BERError("a certificate is not a SEQUENCE") }
                certificates.append(Array(bytes[certificate.encoded]))
            }
            index += 1
            node = try signedData.child(index, "the signer infos")
        }
        if node.isContext(1) {  // CRLs: not used by Apple, ignored
            index += 1
            node = try signedData.child(index, "the signer infos")
        }
        guard node.isUniversal(BERNode.set) else { throw BERError("the signer infos are not a SET") }
        guard index == signedData.children.count - 1 else { throw BERError("unexpected elements after the signer infos") }
        self.certificates = certificates
        var signers: [SignerInfo] = []
        for signer in node.children { signers.append(try SignerInfo(signer, in: bytes)) }
        self.signers = signers
    }
}
