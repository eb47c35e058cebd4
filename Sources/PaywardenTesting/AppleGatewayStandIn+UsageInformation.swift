import Crypto
import Foundation

/// What the stand-in's Retrieve Merchant Token Public Key answers for a merchant token.
public enum StandInPublicKeyAnswer: Sendable {
    /// 200 with the device's key and Apple's ciphersuite.
    case key
    /// 202: the device has not made its key yet.
    case notYetAvailable
    /// This status with an `ErrorResponse` (409, 400, 403, 404, 500…).
    case status(Int)
    /// 200 naming another ciphersuite.
    case ciphersuite(String)
    /// 200 with these bytes as the key (not a point, wrong length…).
    case rawKey([UInt8])
}

/// A notification the stand-in accepted: every check of §1.4 passed and `data` opened.
public struct StandInUsageNotification: Sendable {
    public let merchantID: String
    public let merchantTokenID: String
    public let webServiceURL: String
    public let authenticationToken: String
    /// The sender's public key (`merchantPublicKey`), 97 bytes.
    public let merchantPublicKey: [UInt8]
}

/// The merchant tokens' devices: each holds the P-384 key Apple hands out for its token.
struct UsageInformationDevices: Sendable {
    var keys: [String: P384.KeyAgreement.PrivateKey] = [:]
    var answers: [String: StandInPublicKeyAnswer] = [:]
    /// A status `notify` answers for the token instead of checking it.
    var notifyStatuses: [String: Int] = [:]
    var notifications: [StandInUsageNotification] = []
}

extension AppleGatewayStandIn {
    public static let usageInformationCiphersuite = "HPKE_AUTH_P384_SHA384_AES_GCM_256"

    /// Gives `merchantTokenID` a device (a new P-384 key unless it has one) and sets what the
    /// public-key route answers for it. Returns the device's private key.
    @discardableResult
    public func setUsageInformationDevice(
        merchantTokenID: String, answer: StandInPublicKeyAnswer = .key, newKey: Bool = false
    ) -> P384.KeyAgreement.PrivateKey {
        usageInformation.withLock { devices in
            if newKey || devices.keys[merchantTokenID] == nil { devices.keys[merchantTokenID] = P384.KeyAgreement.PrivateKey() }
            devices.answers[merchantTokenID] = answer
            return devices.keys[merchantTokenID]!
        }
    }

    /// Makes `notify` for `merchantTokenID` answer `status` (nil: check and accept again).
    public func answerUsageNotify(merchantTokenID: String, status: Int?) {
        usageInformation.withLock { $0.notifyStatuses[merchantTokenID] = status }
    }

    /// Every notification accepted so far, oldest first.
    public var usageNotifications: [StandInUsageNotification] { usageInformation.withLock { $0.notifications } }

    /// `POST …/merchantToken/publicKey` and `…/notify`; nil for any other request.
    func usageInformationRoute(_ request: RecordedRequest) -> StandInResponse? {
        let path = request.path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        guard request.method == "POST", parts.count == 6, parts[0] == "paymentservices", parts[1] == "v1", parts[2] == "merchantId",
            parts[4] == "merchantToken", parts[5] == "publicKey" || parts[5] == "notify"
        else { return nil }
        if let refused = Self.checkHeaders(request) { return refused }
        guard let body = request.jsonBody, let token = body["merchantTokenIdentifier"] as? String, !token.isEmpty, token.count <= 64
        else {
            return .error(status: 400, message: "merchantTokenIdentifier is required, at most 64 characters")
        }
        return usageInformation.withLock { devices in
            guard let device = devices.keys[token] else { return .error(status: 404, message: "Resource not found") }
            if parts[5] == "publicKey" {
                return Self.publicKeyAnswer(devices.answers[token] ?? .key, device: device)
            }
            if let status = devices.notifyStatuses[token] {
                return .error(status: status, message: "the stand-in was told to answer \(status)")
            }
            switch Self.openNotification(body, merchantTokenID: token, device: device) {
            case .success(let (url, authenticationToken, sender)):
                devices.notifications.append(
                    StandInUsageNotification(
                        merchantID: parts[3], merchantTokenID: token, webServiceURL: url, authenticationToken: authenticationToken,
                        merchantPublicKey: sender))
                return StandInResponse(status: 200)
            case .failure(let refusal):
                return .error(status: 400, message: refusal.reason)
            }
        }
    }

    private static func publicKeyAnswer(_ answer: StandInPublicKeyAnswer, device: P384.KeyAgreement.PrivateKey) -> StandInResponse {
        let key = Data(device.publicKey.x963Representation).base64EncodedString()
        let body = { (key: String, suite: String) in
            StandInResponse(
                status: 200,
                body: StandInResponse.encode(["merchantTokenPublicKey": key, "statusCode": 200, "supportedCiphersuite": suite]),
                headers: [("Content-Type", "application/json")])
        }
        switch answer {
        case .key: return body(key, usageInformationCiphersuite)
        case .notYetAvailable: return .error(status: 202, message: "Accepted. The public key isn't yet available.")
        case .status(let status): return .error(status: status, message: "the stand-in was told to answer \(status)")
        case .ciphersuite(let suite): return body(key, suite)
        case .rawKey(let bytes): return body(Data(bytes).base64EncodedString(), usageInformationCiphersuite)
        }
    }

    struct Refusal: Error {
        let reason: String
    }

    /// Every check of §1.4 (U9), then the HPKE open of `data` with the device key.
    private static func openNotification(
        _ body: [String: Any], merchantTokenID: String, device: P384.KeyAgreement.PrivateKey
    ) -> Result<(String, String, [UInt8]), Refusal> {
        guard let metadata = body["merchantTokenUsageMetadata"] as? [String: Any] else {
            return .failure(Refusal(reason: "merchantTokenUsageMetadata is required"))
        }
        let limits = [
            "ciphersuite": 64, "data": 4000, "ephemeralPublicKey": 256, "infoHash": 256, "merchantPublicKey": 256,
            "merchantTokenPublicKeyHash": 256,
        ]
        var fields: [String: String] = [:]
        for (name, limit) in limits {
            guard let value = metadata[name] as? String, !value.isEmpty, value.count <= limit else {
                return .failure(Refusal(reason: "merchantTokenUsageMetadata.\(name) must be 1 to \(limit) characters"))
            }
            fields[name] = value
        }
        do {
            let opened = try openEnvelope(
                fields, merchantTokenID: merchantTokenID, device: device,
                merchantPublicKey: try point(fields["merchantPublicKey"]!, "merchantPublicKey"))
            guard let json = try? JSONSerialization.jsonObject(with: Data(opened)) as? [String: Any],
                let url = json["webServiceURL"] as? String, let token = json["authenticationToken"] as? String
            else {
                return .failure(Refusal(reason: "the opened metadata lacks webServiceURL or authenticationToken"))
            }
            return .success((url, token, try point(fields["merchantPublicKey"]!, "merchantPublicKey")))
        } catch let refusal as Refusal {
            return .failure(refusal)
        } catch {
            return .failure(Refusal(reason: "\(error)"))
        }
    }

    /// What a device does with the six fields of Apple's envelope (the notification's metadata, or
    /// the package response, whose `merchantPublicKeyHash` must then match `merchantPublicKey`):
    /// check the suite, the hashes and the points, and open `data` in HPKE auth mode.
    public static func openEnvelope(
        _ fields: [String: String], merchantTokenID: String, device: P384.KeyAgreement.PrivateKey, merchantPublicKey: [UInt8]
    ) throws -> [UInt8] {
        guard fields["ciphersuite"] == usageInformationCiphersuite else { throw Refusal(reason: "ciphersuite is not Apple's") }
        let hex = { (bytes: [UInt8]) in SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined() }
        guard fields["merchantTokenPublicKeyHash"]?.lowercased() == hex(Array(device.publicKey.x963Representation)) else {
            throw Refusal(reason: "merchantTokenPublicKeyHash is not SHA-256 of the device's key")
        }
        let info = Array("ApplePayMerchantTokenUsageInformation_1.0".utf8) + Array(SHA256.hash(data: Array(merchantTokenID.utf8)))
        guard info.count == 73, fields["infoHash"]?.lowercased() == hex(info) else {
            throw Refusal(reason: "infoHash is not SHA-256 of the 73-byte info")
        }
        if let senderHash = fields["merchantPublicKeyHash"], senderHash.lowercased() != hex(merchantPublicKey) {
            throw Refusal(reason: "merchantPublicKeyHash is not SHA-256 of the merchant's public key")
        }
        let enc = try point(fields["ephemeralPublicKey"] ?? "", "ephemeralPublicKey")
        guard let data = Data(base64Encoded: fields["data"] ?? "") else { throw Refusal(reason: "data is not Base64") }
        var recipient = try HPKE.Recipient(
            privateKey: device, ciphersuite: .P384_SHA384_AES_GCM_256, info: Data(info), encapsulatedKey: Data(enc),
            authenticatedBy: try P384.KeyAgreement.PublicKey(x963Representation: merchantPublicKey))
        do {
            return Array(try recipient.open(data))
        } catch {
            throw Refusal(reason: "data does not open with the device's key in HPKE auth mode")
        }
    }

    private static func point(_ base64: String, _ name: String) throws -> [UInt8] {
        guard let bytes = Data(base64Encoded: base64), bytes.count == 97,
            (try? P384.KeyAgreement.PublicKey(x963Representation: bytes)) != nil
        else { throw Refusal(reason: "\(name) is not a Base64 97-byte P-384 point") }
        return Array(bytes)
    }
}
