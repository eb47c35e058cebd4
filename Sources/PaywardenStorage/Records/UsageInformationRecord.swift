import Foundation
import PaywardenPrimitives

/// A merchant token's usage information as Paywarden publishes it (docs/usage-information.md).
public struct UsageInformationRecord: Sendable, Hashable {
    public enum State: String, Sendable, Hashable, CaseIterable {
        /// Apple answered 202: the device has no key yet; `UPDATED_MERCHANT_TOKEN_PUBLIC_KEY` resumes it.
        case awaitingKey = "awaiting_key"
        /// Sealed to the device's key, Apple notified, served to the device.
        case published
    }

    public var merchantTokenID: String
    public var merchantID: String
    public var organization: OrganizationID
    public var state: State
    /// The package (zip) as the merchant last sent it: kept to seal it again when the device's key changes.
    public var package: [UInt8]
    /// The JSON body served to the device (Apple's six fields), once published.
    public var packageResponse: [UInt8]?
    /// SHA-256 of the device's `authenticationToken`, once published; the token itself is never stored.
    public var authenticationTokenHash: [UInt8]?
    public var updatedAt: Date
    /// Counts the writes of the row (1 for the first): what a compare-and-set compares, so a
    /// publication never replaces one it did not read.
    public var revision: Int

    public init(
        merchantTokenID: String, merchantID: String, organization: OrganizationID, state: State, package: [UInt8],
        packageResponse: [UInt8]?,
        authenticationTokenHash: [UInt8]?, updatedAt: Date, revision: Int = 1
    ) {
        self.merchantTokenID = merchantTokenID
        self.merchantID = merchantID
        self.organization = organization
        self.state = state
        self.package = package
        self.packageResponse = packageResponse
        self.authenticationTokenHash = authenticationTokenHash
        self.updatedAt = updatedAt
        self.revision = revision
    }
}

/// A merchant's usage-information sender key (HPKE `skS`, P-384): where it is, never what it is.
public struct UsageInformationSenderKeyRecord: Sendable, Hashable {
    public var merchantID: String
    /// `hsm` (the key is in the HSM) or `wrapped` (a seed wrapped by an HSM key).
    public var custody: String
    /// The HSM key's id (hex): the P-384 key, or the seed's key-encrypting key.
    public var hsmKeyID: String
    /// The uncompressed P-384 point.
    public var publicKey: [UInt8]
    /// The wrapped seed and the wrap path, when wrapped.
    public var wrappedSeed: [UInt8]?
    public var wrapPath: String?
    public var createdAt: Date

    public init(
        merchantID: String, custody: String, hsmKeyID: String, publicKey: [UInt8], wrappedSeed: [UInt8]?, wrapPath: String?,
        createdAt: Date
    ) {
        self.merchantID = merchantID
        self.custody = custody
        self.hsmKeyID = hsmKeyID
        self.publicKey = publicKey
        self.wrappedSeed = wrappedSeed
        self.wrapPath = wrapPath
        self.createdAt = createdAt
    }
}
