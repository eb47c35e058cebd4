import Foundation
import KeyCustody
import PaywardenConfiguration

/// Said on stderr whenever a certificate was accepted under issuers that configuration put in
/// place of Apple's: the setting is for tests and sandboxes, and must not go unnoticed elsewhere.
enum CertificateIssuerWarning {
    static func report(_ store: MerchantKeyStore) {
        guard !store.certificateIssuers.arePinned else { return }
        FileHandle.standardError.write(
            Data(
                """
                paywarden: warning: the certificate was checked against \(store.certificateIssuers.source), not Apple's pinned \
                WWDR CAs; \(SettingCatalog.certificateIssuers.environmentName) is for tests and sandboxes only

                """.utf8))
    }
}
