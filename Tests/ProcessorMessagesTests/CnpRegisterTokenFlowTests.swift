import Foundation
import Testing

@testable import ProcessorMessages

/// What a `POST /vap/communicator/online` handler does with a `registerTokenRequest`, written only
/// against the module's public API (no `@testable` member), so these tests keep that API honest.
enum RegisterTokenHandlerExample {
    /// What the vault would answer for a registration; fixed values stand in for it here.
    static func registered(_ registration: CnpRegisterTokenRequest) -> (token: String, bin: String, type: String) {
        ("4761730000100018", "476173", "VI")
    }

    static func answer(_ body: [UInt8], user: String, password: String, now: Date, transactionId: UInt64) -> [UInt8] {
        // Parse: bytes → CnpOnlineRequest, either namespace (cnpOnlineRequest or litleOnlineRequest).
        let request: CnpOnlineRequest
        do {
            request = try CnpOnlineRequest.parse(body)  // typed throws: ProcessorMessageError
        } catch {
            // error.description / error.code.rawValue / error.field are safe to log.
            return ProcessorXML.serialize(CnpOnlineResponse.errorEnvelope(answering: body, refusing: error))
        }
        // A real handler compares in constant time, against the merchant's stored credentials.
        guard request.user == user, request.password == password else {
            let refusal = CnpOnlineResponse.errorEnvelope(dialect: request.dialect, version: request.version, status: .invalidCredentials)
            return ProcessorXML.serialize(refusal)
        }
        guard case .registerToken(let registration) = request.transaction else {
            let refusal = CnpOnlineResponse.errorEnvelope(
                dialect: request.dialect, version: request.version,
                status: .schemaValidationFailed("\(request.transaction.name) is not served here"))
            return ProcessorXML.serialize(refusal)
        }
        // registration.attributes.id / .reportGroup / .customerId, registration.orderId
        var applePayResponse: CnpApplePayResponse?
        switch registration.source {
        case .paypageRegistrationId(let registrationId):
            _ = registrationId  // redeem it in the vault
        case .applePay(let token):
            // token.data, token.applicationData, token.ephemeralPublicKey, token.publicKeyHash,
            // token.transactionId, token.signature, token.version; token.paymentDataJSON is Apple's
            // paymentData JSON for the Apple Pay module.
            _ = token.paymentDataJSON
            applePayResponse = CnpApplePayResponse(
                applicationExpirationDate: "301231", currencyCode: "840", transactionAmount: "1500", cardholderName: "Jane Doe",
                deviceManufacturerIdentifier: "040010030273", paymentDataType: "3DSecure",
                onlinePaymentCryptogram: TestCards.cryptogram, eciIndicator: "07")
        }
        let issued = registered(registration)
        let response = CnpRegisterTokenResponse(
            attributes: registration.attributes, transactionId: transactionId, response: .registered, responseTime: now,
            token: issued.token, bin: issued.bin, type: issued.type, applePay: applePayResponse)
        let document = CnpOnlineResponse.envelope(
            dialect: request.dialect, version: request.version, transactions: [response.element(request.dialect)])
        return ProcessorXML.serialize(document)
    }
}

@Suite("cnpAPI registerTokenRequest, request to reply")
struct CnpRegisterTokenFlowTests {
    let now = Date(timeIntervalSince1970: 1_714_000_000)  // 2024-04-24T23:06:40Z

    static let header =
        "<applicationData>YXBwLWRhdGE=</applicationData><ephemeralPublicKey>ZXBoZW1lcmFs</ephemeralPublicKey>"
        + "<publicKeyHash>aGFzaA==</publicKeyHash><transactionId>0a1b2c3d</transactionId>"
    static let applePay =
        "<applepay><data>ZGF0YQ==</data><header>\(header)</header><signature>c2lnbmF0dXJl</signature><version>EC_v1</version></applepay>"

    func registration(_ source: String) -> String {
        "<registerTokenRequest id=\"reg-1\" reportGroup=\"Mobile App\" customerId=\"cust-42\"><orderId>order-1</orderId>"
            + source + "</registerTokenRequest>"
    }

    func answer(_ body: String) -> ProcessorXML.Element? {
        let reply = RegisterTokenHandlerExample.answer(Array(body.utf8), user: "USER", password: "secret", now: now, transactionId: 4_242)
        return try? ProcessorXML.parse(reply).root
    }

    @Test(arguments: CnpDialect.allCases)
    func parsesAnApplePayRegistrationAndAnswersWithATokenButNoPAN(_ dialect: CnpDialect) throws {
        let version = dialect == .cnp ? "12.10" : "10.3"
        let body = envelope(registration(Self.applePay), dialect: dialect, version: version, user: "USER", password: "secret")
        let request = try CnpOnlineRequest.parse(Array(body.utf8))
        #expect(request.dialect == dialect && request.version == version && request.user == "USER" && request.password == "secret")
        guard case .registerToken(let registration) = request.transaction, case .applePay(let token) = registration.source else {
            Issue.record("not an Apple Pay registration")
            return
        }
        #expect(registration.attributes == CnpTransactionAttributes(id: "reg-1", reportGroup: "Mobile App", customerId: "cust-42"))
        #expect(registration.orderId == "order-1")
        #expect(
            token
                == CnpApplePay(
                    data: "ZGF0YQ==", applicationData: "YXBwLWRhdGE=", ephemeralPublicKey: "ZXBoZW1lcmFs", publicKeyHash: "aGFzaA==",
                    transactionId: "0a1b2c3d", signature: "c2lnbmF0dXJl", version: "EC_v1"))

        let root = try #require(answer(body))
        let ns = dialect.namespaceURI
        #expect(root.name.matches(dialect.responseRootName, namespaceURI: ns))
        #expect(root.attribute("version") == version && root.attribute("response") == "0" && root.attribute("message") == "Valid Format")
        let response = try #require(root.firstChild(named: "registerTokenResponse", namespaceURI: ns))
        #expect(response.attribute("id") == "reg-1" && response.attribute("reportGroup") == "Mobile App")
        #expect(response.attribute("customerId") == "cust-42")
        #expect(
            response.childNames == [
                dialect.transactionIdName, dialect.tokenName, "bin", "type", "response", "message", "responseTime", "applepayResponse",
            ])
        #expect(
            response.childElements.prefix(7).map(\.text) == [
                "4242", "4761730000100018", "476173", "VI", "801", "Account number was successfully registered", "2024-04-24T23:06:40",
            ])
        let apple = try #require(response.firstChild(named: "applepayResponse", namespaceURI: ns))
        #expect(!apple.childNames.contains("applicationPrimaryAccountNumber"))
        #expect(apple.firstChild(named: "eciIndicator", namespaceURI: ns)?.text == "07")
    }

    @Test(arguments: CnpDialect.allCases)
    func answersAPaypageRegistrationWithoutApplePayResponse(_ dialect: CnpDialect) throws {
        let body = envelope(
            registration("<paypageRegistrationId>5760311187832973287</paypageRegistrationId>"), dialect: dialect, user: "USER",
            password: "secret")
        guard case .registerToken(let registration) = try CnpOnlineRequest.parse(Array(body.utf8)).transaction else {
            Issue.record("not a registration")
            return
        }
        #expect(registration.source == .paypageRegistrationId("5760311187832973287"))
        let response = try #require(answer(body)?.firstChild(named: "registerTokenResponse", namespaceURI: dialect.namespaceURI))
        #expect(
            response.childNames == [dialect.transactionIdName, dialect.tokenName, "bin", "type", "response", "message", "responseTime"])
    }

    @Test(arguments: CnpDialect.allCases)
    func refusesBadBodiesAndCredentialsWithAnEnvelopeInTheRequestsDialect(_ dialect: CnpDialect) throws {
        let version = dialect == .cnp ? "12.10" : "10.3"
        let invalid = envelope(
            "<registerTokenRequest id=\"r\" reportGroup=\"g\"><orderId>o</orderId></registerTokenRequest>", dialect: dialect,
            version: version, user: "USER", password: "secret")
        let refusal = try #require(answer(invalid))
        #expect(refusal.name.matches(dialect.responseRootName, namespaceURI: dialect.namespaceURI))
        #expect(refusal.attribute("version") == version && refusal.attribute("response") == "1")
        #expect(refusal.attribute("message")?.hasPrefix("Error validating xml data against the schema: ") == true)
        #expect(refusal.childElements.isEmpty)

        let wrongPassword = envelope(registration(Self.applePay), dialect: dialect, version: version, user: "USER", password: "guess")
        let denied = try #require(answer(wrongPassword))
        #expect(denied.name.matches(dialect.responseRootName, namespaceURI: dialect.namespaceURI))
        #expect(denied.attribute("response") == "3" && denied.childElements.isEmpty)
    }

    @Test func answersWhatIsNotACnpRequestInTheFallbackDialect() throws {
        let notXML = try #require(answer("not xml"))
        #expect(notXML.name.matches("cnpOnlineResponse", namespaceURI: CnpDialect.cnp.namespaceURI))
        #expect(notXML.attribute("version") == "12.10" && notXML.attribute("response") == "2")
        let doctype = try #require(answer("<!DOCTYPE x><x/>"))
        #expect(doctype.attribute("response") == "5")
        let oddVersion = envelope(registration(Self.applePay), dialect: .litle, version: "4111111111111111", user: "USER", password: "x")
        let refusal = try #require(answer(oddVersion))
        #expect(refusal.name.matches("litleOnlineResponse", namespaceURI: CnpDialect.litle.namespaceURI))
        #expect(refusal.attribute("version") == "12.10" && refusal.attribute("response") == "1")
        let litle = CnpOnlineResponse.errorEnvelope(
            answering: Array("{}".utf8), refusing: ProcessorMessageError(.cnpAPI, .malformedXML, field: nil, "x"), fallbackDialect: .litle,
            fallbackVersion: "10.3")
        #expect(litle.root.name.localName == "litleOnlineResponse" && litle.root.attribute("version") == "10.3")
    }

    @Test func errorsNeverQuoteAnAccountNumberHiddenInAName() throws {
        let pan = "4111111111111111"
        let bodies = [
            envelope("<registerTokenRequest id=\"r\" reportGroup=\"g\"><n\(pan)/></registerTokenRequest>"),
            envelope("<registerTokenRequest id=\"r\" reportGroup=\"g\"><n4111-1111-1111-1111/></registerTokenRequest>"),
            "<r\(pan) xmlns=\"\(CnpDialect.cnp.namespaceURI)\"/>",
            envelope(
                "<registerTokenRequest id=\"r\" reportGroup=\"g\"><paypageRegistrationId>1</paypageRegistrationId><x\(pan)/>"
                    + "</registerTokenRequest>"),
        ]
        for body in bodies {
            let error = try #require(messageError { _ = try CnpOnlineRequest.parse(Array(body.utf8)) })
            #expect(!error.description.contains("1111111111") && !error.description.contains("1111-1111"), "\(error)")
            let reply = String(
                decoding: ProcessorXML.serialize(CnpOnlineResponse.errorEnvelope(answering: Array(body.utf8), refusing: error)),
                as: UTF8.self)
            #expect(!reply.contains("1111111111") && !reply.contains("1111-1111"))
        }
        #expect(
            ProcessorMessageError.redacted("a/n4111 1111 1111 1111 (got 26 of 25)", maximum: 100) == "a/n4111 #### #### #### (got 26 of 25)"
        )
        #expect(ProcessorMessageError.redacted("document is 70000 bytes; the limit is 65536", maximum: 100).contains("70000"))
        #expect(ProcessorMessageError.redacted(String(repeating: "x", count: 50), maximum: 10) == String(repeating: "x", count: 9) + "…")
    }
}
