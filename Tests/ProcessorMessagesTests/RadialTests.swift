import Foundation
import Testing

@testable import ProcessorMessages

@Suite("Radial payment messages")
struct RadialTests {
    static let ns = "http://api.gsicommerce.com/schema/checkout/1.0"

    static func request(replacing target: String = "", with replacement: String = "") throws -> [UInt8] {
        var text = try Fixture.text("radial-dw-auth-request.xml")
        if !target.isEmpty {
            guard let range = text.range(of: target) else { throw TestFailure.fixtureMismatch(target) }
            text.replaceSubrange(range, with: replacement)
        }
        return Array(text.utf8)
    }

    enum TestFailure: Error { case fixtureMismatch(String) }

    @Test func parsesTheDigitalWalletRequest() throws {
        let request = try RadialCreditCardAuthRequest.parse(try Self.request())
        let wallet = try #require(request.wallet)
        #expect(request.requestId == "REQ-000000000005")
        #expect(request.orderId == "ORDER-0005" && request.amount == "14.99" && request.currencyCode == "USD")
        #expect(wallet.transactionId == "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9")
        #expect(wallet.ephemeralPublicKey == "c3ludGhldGljLWVwaGVtZXJhbC1rZXk=")
        #expect(wallet.data == "c3ludGhldGljLWVuY3J5cHRlZC1kYXRhLWZvci10ZXN0cy1vbmx5")
        #expect(
            request.billingAddress
                == RadialAddress(
                    lines: ["123 Main St", "Building 123"], city: "King of Prussia",
                    mainDivision: "PA", countryCode: "US", postalCode: "19406"))
        #expect(request.shippingAddress.mainDivision == "PA")
        #expect(request.schemaVersion == "1.2" && request.shipToPhoneNo == nil)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(wallet.paymentDataJSON)) as? [String: Any])
        #expect(json["data"] as? String == wallet.data)
    }

    @Test(arguments: RadialSchema.walletRequestOrder.filter { RadialSchema.walletRequestRequired.contains($0) })
    func namesEachMissingRequiredElement(_ name: String) throws {
        var root = try ProcessorXML.parse(try Self.request()).root
        root.removeChildren(named: name, namespaceURI: Self.ns)
        let error = messageError { _ = try RadialCreditCardAuthRequest.parse(ProcessorXML.serialize(root)) }
        #expect(error?.code == .missingField)
        #expect(error?.field == "CreditCardAuthRequest/\(name)")
    }

    struct Refusal: Sendable, CustomTestStringConvertible {
        let label: String
        let target: String
        let replacement: String
        let code: ProcessorMessageError.Code
        let field: String?
        var testDescription: String { label }
    }

    static let refusals: [Refusal] = {
        let long = { (count: Int) in String(repeating: "a", count: count) }
        let path = "CreditCardAuthRequest"
        return [
            Refusal(
                label: "no requestId", target: " requestId=\"REQ-000000000005\"", replacement: "", code: .missingField,
                field: "\(path)/@requestId"),
            Refusal(
                label: "requestId too long", target: "REQ-000000000005", replacement: long(41), code: .fieldTooLong,
                field: "\(path)/@requestId"),
            Refusal(label: "OrderId too long", target: "ORDER-0005", replacement: long(21), code: .fieldTooLong, field: "\(path)/OrderId"),
            Refusal(label: "OrderId empty", target: "ORDER-0005", replacement: "", code: .fieldTooShort, field: "\(path)/OrderId"),
            Refusal(
                label: "Amount with one place", target: ">14.99<", replacement: ">14.9<", code: .invalidFormat, field: "\(path)/Amount"),
            Refusal(
                label: "currencyCode lower case", target: "currencyCode=\"USD\"", replacement: "currencyCode=\"usd\"",
                code: .invalidFormat, field: "\(path)/Amount/@currencyCode"),
            Refusal(
                label: "no currencyCode", target: " currencyCode=\"USD\"", replacement: "", code: .missingField,
                field: "\(path)/Amount/@currencyCode"),
            Refusal(
                label: "first name too long", target: "<BillingFirstName>Jane", replacement: "<BillingFirstName>" + long(65),
                code: .fieldTooLong, field: "\(path)/BillingFirstName"),
            Refusal(
                label: "phone with letters", target: "6101234567", replacement: "call me", code: .invalidFormat,
                field: "\(path)/BillingPhoneNo"),
            Refusal(
                label: "phone too long", target: "6101234567", replacement: String(repeating: "1", count: 21), code: .fieldTooLong,
                field: "\(path)/BillingPhoneNo"),
            Refusal(
                label: "Line1 too long", target: "<Line1>123 Main St</Line1>\n    <Line2>",
                replacement: "<Line1>\(long(71))</Line1>\n    <Line2>",
                code: .fieldTooLong, field: "\(path)/BillingAddress/Line1"),
            Refusal(
                label: "Line1 missing", target: "<Line1>123 Main St</Line1>\n    <Line2>", replacement: "<Line2>",
                code: .missingField, field: "\(path)/BillingAddress/Line1"),
            Refusal(
                label: "City too long", target: "<City>King of Prussia</City>\n    <MainDivisionCode>",
                replacement: "<City>\(long(41))</City>\n    <MainDivisionCode>", code: .fieldTooLong, field: "\(path)/BillingAddress/City"),
            Refusal(
                label: "MainDivision too long", target: "<MainDivisionCode>PA", replacement: "<MainDivisionCode>\(long(36))",
                code: .fieldTooLong, field: "\(path)/BillingAddress/MainDivisionCode"),
            Refusal(
                label: "CountryCode too short",
                target: "<CountryCode>US</CountryCode>\n    <PostalCode>19406</PostalCode>\n  </BillingAddress>",
                replacement: "<CountryCode>U</CountryCode>\n    <PostalCode>19406</PostalCode>\n  </BillingAddress>",
                code: .fieldTooShort, field: "\(path)/BillingAddress/CountryCode"),
            Refusal(
                label: "PostalCode too long", target: "<PostalCode>19406</PostalCode>\n  </BillingAddress>",
                replacement: "<PostalCode>\(long(16))</PostalCode>\n  </BillingAddress>", code: .fieldTooLong,
                field: "\(path)/BillingAddress/PostalCode"),
            Refusal(
                label: "address out of order", target: "<City>King of Prussia</City>\n    <MainDivisionCode>PA</MainDivisionCode>",
                replacement: "<MainDivisionCode>PA</MainDivisionCode>\n    <City>King of Prussia</City>",
                code: .outOfOrder, field: "\(path)/BillingAddress/City"),
            Refusal(
                label: "unknown address element", target: "<PostalCode>19406</PostalCode>\n  </BillingAddress>",
                replacement: "<PostalCode>19406</PostalCode><Floor>4</Floor></BillingAddress>", code: .unexpectedField,
                field: "\(path)/BillingAddress/Floor"),
            Refusal(
                label: "email without @", target: "jane@example.com", replacement: "jane.example.com", code: .invalidFormat,
                field: "\(path)/CustomerEmail"),
            Refusal(
                label: "email too long", target: "jane@example.com", replacement: long(60) + "@example.com", code: .fieldTooLong,
                field: "\(path)/CustomerEmail"),
            Refusal(
                label: "IP above 255", target: "203.0.113.7", replacement: "256.0.113.7", code: .invalidFormat,
                field: "\(path)/CustomerIPAddress"),
            Refusal(
                label: "IP with a leading zero", target: "203.0.113.7", replacement: "203.0.113.07", code: .invalidFormat,
                field: "\(path)/CustomerIPAddress"),
            Refusal(
                label: "IP with three parts", target: "203.0.113.7", replacement: "203.0.113", code: .invalidFormat,
                field: "\(path)/CustomerIPAddress"),
            Refusal(
                label: "SchemaVersion not a version", target: "<SchemaVersion>1.2", replacement: "<SchemaVersion>v1",
                code: .invalidFormat, field: "\(path)/SchemaVersion"),
            Refusal(
                label: "OrderId before the wallet", target: "  <WalletPaymentInformation>",
                replacement: "<OrderId>ORDER-0004</OrderId><WalletPaymentInformation>", code: .outOfOrder,
                field: "\(path)/WalletPaymentInformation"),
            Refusal(
                label: "duplicate first name", target: "<BillingFirstName>Jane</BillingFirstName>",
                replacement: "<BillingFirstName>Jane</BillingFirstName><BillingFirstName>J</BillingFirstName>",
                code: .duplicateField, field: "\(path)/BillingFirstName"),
            Refusal(
                label: "elements out of order",
                target: "<BillingFirstName>Jane</BillingFirstName>\n  <BillingLastName>Doe</BillingLastName>",
                replacement: "<BillingLastName>Doe</BillingLastName>\n  <BillingFirstName>Jane</BillingFirstName>",
                code: .outOfOrder, field: "\(path)/BillingFirstName"),
            Refusal(
                label: "another wallet", target: "<Version>EC_v1</Version>", replacement: "<PazeData>x</PazeData>",
                code: .unsupportedPaymentSource, field: "\(path)/WalletPaymentInformation/PazeData"),
            Refusal(
                label: "wallet data not Base64", target: "<Signature>c3ludGhldGljLXNpZ25hdHVyZQ==", replacement: "<Signature>not base64!",
                code: .invalidFormat, field: "\(path)/WalletPaymentInformation/Signature"),
            Refusal(
                label: "wallet version too long", target: "<Version>EC_v1", replacement: "<Version>\(long(11))",
                code: .fieldTooLong, field: "\(path)/WalletPaymentInformation/Version"),
            Refusal(
                label: "a PaymentContext beside the wallet", target: "<OrderId>ORDER-0005</OrderId>",
                replacement: "<PaymentContext/><OrderId>ORDER-0005</OrderId>", code: .unexpectedField, field: "\(path)/PaymentContext"),
            Refusal(
                label: "wrong root", target: "<CreditCardAuthRequest xmlns=\"http://api.gsicommerce.com/schema/checkout/1.0\"",
                replacement: "<CreditCardAuthRequest xmlns=\"urn:other\"", code: .unexpectedRoot, field: "CreditCardAuthRequest"),
        ]
    }()

    @Test(arguments: refusals)
    func refusesWithANamedError(_ refusal: Refusal) throws {
        let body = try Self.request(replacing: refusal.target, with: refusal.replacement)
        let error = messageError { _ = try RadialCreditCardAuthRequest.parse(body) }
        #expect(error?.code == refusal.code, "\(error?.description ?? "no error")")
        #expect(error?.field == refusal.field, "\(error?.description ?? "no error")")
        #expect(error?.format == .radial)
    }

    @Test func forwardsTheCardInACardNotPresentRequest() throws {
        let request = try RadialCreditCardAuthRequest.parse(try Self.request())
        let forwarded = RadialForwarding.upstreamRequest(request, card: try TestCards.applePay())
        #expect(forwarded.tenderType == "VC")
        let root = forwarded.document.root
        #expect(
            root.childNames == [
                "PaymentContext", "ExpirationDate", "Amount", "BillingFirstName", "BillingLastName", "BillingPhoneNo", "BillingAddress",
                "CustomerEmail", "CustomerIPAddress", "ShipToFirstName", "ShipToLastName", "ShippingAddress",
                "isRequestToCorrectCVVOrAVSError", "SecureVerificationData", "SchemaVersion", "PaymentId",
            ])
        let context = try #require(root.firstChild(named: "PaymentContext", namespaceURI: Self.ns))
        #expect(context.childNames == ["OrderId", "PaymentAccountUniqueId"])
        #expect(context.childElements.map(\.text) == ["ORDER-0005", TestCards.pan])
        #expect(context.childElements.last?.attribute("isToken") == "false")
        #expect(root.firstChild(named: "ExpirationDate", namespaceURI: Self.ns)?.text == "2030-12")
        #expect(root.firstChild(named: "isRequestToCorrectCVVOrAVSError", namespaceURI: Self.ns)?.text == "false")
        let secure = try #require(root.firstChild(named: "SecureVerificationData", namespaceURI: Self.ns))
        #expect(
            secure.childNames == [
                "AuthenticationAvailable", "AuthenticationStatus", "CavvUcaf", "TransactionId", "ECI", "PayerAuthenticationResponse",
            ])
        #expect(secure.childElements.map(\.text) == ["Y", "Y", TestCards.cryptogram, "", "07", ""])
        let output = serialized(forwarded.document)
        #expect(!output.contains("WalletPaymentInformation") && !output.contains("c3ludGhldGlj"))
        #expect(output.contains("requestId=\"REQ-000000000005\""))
        #expect(!forwarded.description.contains(TestCards.pan))
    }

    /// Seed 003's second step: the wallet request's card replaced by the high-value token `decryptblob` answered.
    static func tokenRequest(isToken: String = "true", extra: String = "") throws -> [UInt8] {
        let wallet = try Fixture.text("radial-dw-auth-request.xml")
        guard let start = wallet.range(of: "<WalletPaymentInformation>"), let end = wallet.range(of: "<OrderId>ORDER-0005</OrderId>")
        else { throw TestFailure.fixtureMismatch("WalletPaymentInformation … OrderId") }
        var text = wallet
        text.replaceSubrange(
            start.lowerBound..<end.upperBound,
            with: #"<PaymentContext><OrderId>ORDER-0007</OrderId><PaymentAccountUniqueId isToken="\#(isToken)">4761730000100018"#
                + "</PaymentAccountUniqueId></PaymentContext><ExpirationDate>2030-12</ExpirationDate>\(extra)")
        return Array(text.utf8)
    }

    @Test func parsesTheTokenRequestAndForwardsTheCardWhereTheTokenWas() throws {
        let request = try RadialCreditCardAuthRequest.parse(try Self.tokenRequest())
        #expect(request.source == .highValueToken("4761730000100018") && request.wallet == nil && request.orderId == "ORDER-0007")
        let forwarded = RadialForwarding.upstreamRequest(request, card: try TestCards.applePay())
        let root = forwarded.document.root
        #expect(Array(root.childNames.prefix(3)) == ["PaymentContext", "ExpirationDate", "Amount"])
        let context = try #require(root.firstChild(named: "PaymentContext", namespaceURI: Self.ns))
        #expect(context.childElements.map(\.text) == ["ORDER-0007", TestCards.pan])
        #expect(context.childElements.last?.attribute("isToken") == "false")
        #expect(root.children(named: "ExpirationDate", namespaceURI: Self.ns).map(\.text) == ["2030-12"])
        #expect(!serialized(forwarded.document).contains("4761730000100018"))
    }

    @Test func refusesAnAccountNumberOrASecurityCodeInTheTokenRequest() throws {
        let clear = messageError { _ = try RadialCreditCardAuthRequest.parse(try Self.tokenRequest(isToken: "false")) }
        #expect(clear?.code == .invalidValue && clear?.field == "CreditCardAuthRequest/PaymentContext/PaymentAccountUniqueId/@isToken")
        #expect(clear?.description.contains("4761730000100018") == false)
        let code = messageError {
            _ = try RadialCreditCardAuthRequest.parse(try Self.tokenRequest(extra: "<CardSecurityCode>123</CardSecurityCode>"))
        }
        #expect(code?.code == .unexpectedField && code?.field == "CreditCardAuthRequest/CardSecurityCode")
        let expiry = messageError {
            _ = try RadialCreditCardAuthRequest.parse(
                Array(String(decoding: try Self.tokenRequest(), as: UTF8.self).replacingOccurrences(of: ">2030-12<", with: ">12/30<").utf8))
        }
        #expect(expiry?.code == .invalidFormat && expiry?.field == "CreditCardAuthRequest/ExpirationDate")
    }

    @Test func putsTheTokenInTheReplyAndNeverThePAN() throws {
        let reply = try RadialReplyRewriter.clientReply(
            try Fixture.bytes("radial-auth-reply.xml"), token: "4761730000100018", forwarded: try TestCards.applePay())
        let context = try #require(reply.root.firstChild(named: "PaymentContext", namespaceURI: Self.ns))
        let account = try #require(context.firstChild(named: "PaymentAccountUniqueId", namespaceURI: Self.ns))
        #expect(account.text == "4761730000100018" && account.attribute("isToken") == "true")
        #expect(context.childNames == ["OrderId", "PaymentAccountUniqueId"])
        #expect(
            reply.root.childNames == [
                "PaymentContext", "ResponseCode", "AuthorizationResponseCode", "BankAuthorizationCode", "CVV2ResponseCode",
                "AVSResponseCode",
                "AmountAuthorized", "TenderType", "Extension",
            ])
        let output = serialized(reply)
        #expect(!output.contains(TestCards.pan))
        #expect(output.contains("card 476173******0010 approved"))
    }

    @Test func replacesAnEncryptedAccountAndRefusesReplyWithoutContext() throws {
        let encrypted =
            "<CreditCardAuthReply xmlns=\"\(Self.ns)\"><PaymentContext><OrderId>o</OrderId>"
            + "<EncryptedPaymentAccountUniqueId>abc</EncryptedPaymentAccountUniqueId></PaymentContext></CreditCardAuthReply>"
        let reply = try RadialReplyRewriter.clientReply(Array(encrypted.utf8), token: "tok", forwarded: nil)
        #expect(reply.root.childElements.first?.childNames == ["OrderId", "PaymentAccountUniqueId"])
        let bare = "<CreditCardAuthReply xmlns=\"\(Self.ns)\"><ResponseCode>APPROVED</ResponseCode></CreditCardAuthReply>"
        #expect(
            messageError { _ = try RadialReplyRewriter.clientReply(Array(bare.utf8), token: "tok", forwarded: nil) }?.field
                == "CreditCardAuthReply/PaymentContext")
        let other = messageError {
            _ = try RadialReplyRewriter.clientReply(Array("<Fault xmlns=\"\(Self.ns)\"/>".utf8), token: "tok", forwarded: nil)
        }
        #expect(other?.code == .unexpectedRoot)
    }

    @Test func parsesAndValidatesADecryptBlobRequest() throws {
        let request = try RadialDecryptBlobRequest.parse(try Fixture.bytes("radial-decrypt-blob-request.xml"))
        #expect(request.algorithmVersion == "1")
        #expect(request.blob.transactionId == "0a1b2c3d4e5f60718293a4b5c6d7e8f9" && request.blob.version == "EC_v1")
        let text = try Fixture.text("radial-decrypt-blob-request.xml")
        let cases: [(String, String, ProcessorMessageError.Code, String)] = [
            (
                "<TransactionId>0a1b2c3d4e5f60718293a4b5c6d7e8f9</TransactionId>", "", .missingField,
                "DecryptBlobRequest/EncryptionHeader/TransactionId"
            ),
            ("<Version>EC_v1</Version>", "<Version>EC_v1</Version><Version>EC_v1</Version>", .duplicateField, "DecryptBlobRequest/Version"),
            ("<Version>EC_v1</Version>", "<Version>EC_v1</Version><Extra/>", .unexpectedField, "DecryptBlobRequest/Extra"),
            ("<AlgorithmVersion>1</AlgorithmVersion>", "", .missingField, "DecryptBlobRequest/AlgorithmVersion"),
            (
                "<Data>c3ludGhldGljLWVuY3J5cHRlZC1kYXRhLWZvci10ZXN0cy1vbmx5</Data>", "<Data>%%%</Data>", .invalidFormat,
                "DecryptBlobRequest/Data"
            ),
            ("<DecryptBlobRequest", "<DecryptBlobReply", .malformedXML, ""),
        ]
        for (target, replacement, code, field) in cases {
            let body = Array(text.replacingOccurrences(of: target, with: replacement).utf8)
            let error = messageError { _ = try RadialDecryptBlobRequest.parse(body) }
            #expect(error?.code == code, "\(target)")
            if !field.isEmpty { #expect(error?.field == field, "\(target)") }
        }
        let wrongRoot = messageError { _ = try RadialDecryptBlobRequest.parse(Array("<DecryptBlobReply xmlns=\"\(Self.ns)\"/>".utf8)) }
        #expect(wrongRoot?.code == .unexpectedRoot)
    }

    @Test func buildsADecryptBlobReplyWithoutPANOrCryptogram() throws {
        let reply = RadialDecryptBlobReply(
            token: "4761730000100018", expirationYYMMDD: "301231", tenderType: "VC", currencyCode: "840", transactionAmount: "1499",
            cardholderName: "Jane Doe", deviceManufacturerIdentifier: "040010030273", paymentDataType: "3DSecure", eci: "07",
            applePayTransactionId: "0a1b2c3d4e5f60718293a4b5c6d7e8f9")
        let root = try ProcessorXML.parse(ProcessorXML.serialize(try reply.document())).root
        #expect(root.name.matches("DecryptBlobReply", namespaceURI: Self.ns))
        #expect(
            root.childNames == [
                "PaymentAccountUniqueId", "ExpirationDate", "TenderType", "CurrencyCode", "TransactionAmount", "CardholderName",
                "DeviceManufacturerIdentifier", "PaymentDataType", "ECI", "ApplePayTransactionId",
            ])
        #expect(root.childElements.first?.attribute("isToken") == "true")
        #expect(root.firstChild(named: "ExpirationDate", namespaceURI: Self.ns)?.text == "2030-12")
        #expect(messageError { _ = try RadialDecryptBlobReply(token: "t", expirationYYMMDD: "3012").document() }?.field == "ExpirationDate")
    }

    @Test func buildsAFault() throws {
        let error = messageError { _ = try RadialCreditCardAuthRequest.parse(Array("<x/>".utf8)) }
        let fault = RadialFault(refusing: try #require(error), timestamp: Date(timeIntervalSince1970: 1_714_000_000)).document()
        let root = try ProcessorXML.parse(ProcessorXML.serialize(fault)).root
        #expect(root.name.matches("Fault", namespaceURI: Self.ns))
        #expect(root.childNames == ["CreateTimestamp", "Code", "Description"])
        #expect(root.childElements.first?.text == "2024-04-24T23:06:40+00:00")
        #expect(root.childElements[1].text == "VALIDATION_FAILED")
    }
}
