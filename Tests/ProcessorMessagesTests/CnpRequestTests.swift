import Foundation
import Testing

@testable import ProcessorMessages

@Suite("cnpAPI request parsing and validation")
struct CnpRequestTests {
    @Test func parsesAPaypageAuthorizationInTheCnpNamespace() throws {
        let request = try CnpOnlineRequest.parse(try Fixture.bytes("cnp-authorization-paypage.xml"))
        #expect(request.dialect == .cnp)
        #expect(request.version == "12.10")
        #expect(request.merchantId == "1000001")
        #expect(request.user == "PAYWARDENUSER")
        guard case .authorization(let authorization) = request.transaction else {
            Issue.record("not an authorization")
            return
        }
        #expect(authorization.attributes == CnpTransactionAttributes(id: "auth-0001", reportGroup: "Mobile App", customerId: "cust-42"))
        #expect(authorization.orderId == "order-0001")
        #expect(
            authorization.paymentSource
                == .paypage(
                    CnpPaypage(
                        paypageRegistrationId: "5760311187832973287", expDate: "1230", hasCardValidationNum: true, type: "VI")))
        #expect(!request.description.contains("not-a-real-pass"))
    }

    @Test func parsesAnApplePaySaleInTheLegacyNamespaceWithPrefixes() throws {
        let request = try CnpOnlineRequest.parse(try Fixture.bytes("litle-sale-applepay.xml"))
        #expect(request.dialect == .litle)
        #expect(request.version == "10.3")
        guard case .sale(let sale) = request.transaction, case .applePay(let token) = sale.paymentSource else {
            Issue.record("not an Apple Pay sale")
            return
        }
        #expect(token.version == "EC_v1")
        #expect(token.applicationData == "6170706c69636174696f6e2d64617461")
        #expect(token.transactionId == "0a1b2c3d4e5f60718293a4b5c6d7e8f9")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(token.paymentDataJSON)) as? [String: Any])
        #expect(json["version"] as? String == "EC_v1")
        #expect((json["header"] as? [String: String])?["publicKeyHash"] == "c3ludGhldGljLWtleS1oYXNo")
    }

    @Test func parsesRegisterTokenRequestsInBothNamespaces() throws {
        let cnp = try CnpOnlineRequest.parse(try Fixture.bytes("cnp-register-token-applepay.xml"))
        guard case .registerToken(let registration) = cnp.transaction, case .applePay(let token) = registration.source else {
            Issue.record("not an Apple Pay registration")
            return
        }
        #expect(registration.orderId == "order-0003")
        #expect(token.applicationData == nil)
        let litle = try CnpOnlineRequest.parse(try Fixture.bytes("litle-register-token-paypage.xml"))
        #expect(litle.dialect == .litle)
        guard case .registerToken(let legacy) = litle.transaction else {
            Issue.record("not a registration")
            return
        }
        #expect(legacy.source == .paypageRegistrationId("5760311187832973287"))
        #expect(legacy.orderId == nil)
    }

    @Test func keepsOtherTransactionTypesOpaque() throws {
        let body = envelope("<capture id=\"c1\" reportGroup=\"g\"><cnpTxnId>123</cnpTxnId><future/></capture>")
        let request = try CnpOnlineRequest.parse(Array(body.utf8))
        guard case .other(let element) = request.transaction else {
            Issue.record("expected an opaque transaction")
            return
        }
        #expect(element.childNames == ["cnpTxnId", "future"])
    }

    @Test func acceptsAReauthorizationByTransactionId() throws {
        let body = envelope("<authorization id=\"a\" reportGroup=\"g\"><cnpTxnId>1234567890</cnpTxnId></authorization>")
        guard case .authorization(let auth) = try CnpOnlineRequest.parse(Array(body.utf8)).transaction else {
            Issue.record("no auth")
            return
        }
        #expect(auth.paymentSource == .none)
        #expect(!auth.needsCardData)
    }

    @Test func idLengthFollowsEachSchema() throws {
        let thirtySix = String(repeating: "i", count: 36)
        #expect(throws: Never.self) { try CnpOnlineRequest.parse(Array(envelope(authorization(id: thirtySix)).utf8)) }
        let cnp = messageError { _ = try CnpOnlineRequest.parse(Array(envelope(authorization(id: thirtySix + "i")).utf8)) }
        #expect(cnp?.code == .fieldTooLong && cnp?.field == "authorization/@id")
        let litle = messageError {
            _ = try CnpOnlineRequest.parse(Array(envelope(authorization(id: String(repeating: "i", count: 26)), dialect: .litle).utf8))
        }
        #expect(litle?.code == .fieldTooLong && litle?.field == "authorization/@id")
    }

    struct Refusal: Sendable, CustomTestStringConvertible {
        let label: String
        let body: String
        let code: ProcessorMessageError.Code
        let field: String?
        var testDescription: String { label }
    }

    static let refusals: [Refusal] = {
        let long = { (count: Int) in String(repeating: "a", count: count) }
        let paypage = { (inner: String) in authorization(source: "<paypage>\(inner)</paypage>") }
        let applePay = { (data: String, header: String, signature: String, version: String) in
            "<applepay><data>\(data)</data><header>\(header)</header><signature>\(signature)</signature>"
                + "<version>\(version)</version></applepay>"
        }
        let header = { (key: String, hash: String, transaction: String) in
            "<ephemeralPublicKey>\(key)</ephemeralPublicKey><publicKeyHash>\(hash)</publicKeyHash>"
                + "<transactionId>\(transaction)</transactionId>"
        }
        let goodHeader = header("k", "h", "t")
        let ns = CnpDialect.cnp.namespaceURI
        return [
            Refusal(
                label: "root in the wrong namespace", body: "<cnpOnlineRequest xmlns=\"\(CnpDialect.litle.namespaceURI)\"/>",
                code: .unexpectedRoot, field: "cnpOnlineRequest"),
            Refusal(label: "not XML", body: "<cnpOnlineRequest", code: .malformedXML, field: nil),
            Refusal(
                label: "missing version", body: "<cnpOnlineRequest xmlns=\"\(ns)\" merchantId=\"1\"/>",
                code: .missingField, field: "cnpOnlineRequest/@version"),
            Refusal(
                label: "version too long", body: envelope(authorization(), version: long(11)),
                code: .fieldTooLong, field: "cnpOnlineRequest/@version"),
            Refusal(
                label: "merchantId too long", body: envelope(authorization(), merchantId: long(51)),
                code: .fieldTooLong, field: "cnpOnlineRequest/@merchantId"),
            Refusal(
                label: "no authentication",
                body: "<cnpOnlineRequest xmlns=\"\(ns)\" version=\"12.10\" merchantId=\"1\">\(authorization())</cnpOnlineRequest>",
                code: .missingField, field: "cnpOnlineRequest/authentication"),
            Refusal(
                label: "user too long", body: envelope(authorization(), user: long(21)), code: .fieldTooLong, field: "authentication/user"),
            Refusal(label: "no transaction", body: envelope(""), code: .missingField, field: "cnpOnlineRequest/transaction"),
            Refusal(
                label: "two transactions", body: envelope(authorization() + authorization()),
                code: .unexpectedField, field: "cnpOnlineRequest/authorization"),
            Refusal(
                label: "missing reportGroup", body: envelope("<authorization id=\"a\"><orderId>o</orderId></authorization>"),
                code: .missingField, field: "authorization/@reportGroup"),
            Refusal(
                label: "empty reportGroup", body: envelope(authorization(reportGroup: "   ")), code: .fieldTooShort,
                field: "authorization/@reportGroup"),
            Refusal(
                label: "reportGroup too long", body: envelope(authorization(reportGroup: long(26))),
                code: .fieldTooLong, field: "authorization/@reportGroup"),
            Refusal(
                label: "customerId too long", body: envelope(authorization(customerId: long(51))),
                code: .fieldTooLong, field: "authorization/@customerId"),
            Refusal(
                label: "orderId too long", body: envelope(authorization(orderId: long(26))), code: .fieldTooLong,
                field: "authorization/orderId"),
            Refusal(
                label: "no orderSource", body: envelope(authorization(orderSource: "")), code: .missingField,
                field: "authorization/orderSource"),
            Refusal(
                label: "no payment source", body: envelope(authorization(source: "")), code: .missingField,
                field: "authorization/payment source"),
            Refusal(
                label: "two payment sources", body: envelope(authorization(source: "<card><type>VI</type></card><paypage/>")),
                code: .duplicateField, field: "authorization/payment source"),
            Refusal(
                label: "payment source before orderSource",
                body: envelope(
                    "<sale id=\"s\" reportGroup=\"g\"><orderId>o</orderId><amount>1</amount>"
                        + "<paypage><paypageRegistrationId>1</paypageRegistrationId></paypage><orderSource>ecommerce</orderSource></sale>"),
                code: .outOfOrder, field: "sale/paypage"),
            Refusal(
                label: "cardholderAuthentication and fraudCheck",
                body: envelope(authorization(after: "<fraudCheck/><cardholderAuthentication/>")),
                code: .duplicateField, field: "authorization/cardholderAuthentication"),
            Refusal(
                label: "registration id too long", body: envelope(paypage("<paypageRegistrationId>\(long(513))</paypageRegistrationId>")),
                code: .fieldTooLong, field: "authorization/paypage/paypageRegistrationId"),
            Refusal(
                label: "registration id empty", body: envelope(paypage("<paypageRegistrationId></paypageRegistrationId>")),
                code: .fieldTooShort, field: "authorization/paypage/paypageRegistrationId"),
            Refusal(
                label: "expDate not digits",
                body: envelope(paypage("<paypageRegistrationId>1</paypageRegistrationId><expDate>12/3</expDate>")),
                code: .invalidFormat, field: "authorization/paypage/expDate"),
            Refusal(
                label: "expDate month 13",
                body: envelope(paypage("<paypageRegistrationId>1</paypageRegistrationId><expDate>1330</expDate>")),
                code: .invalidValue, field: "authorization/paypage/expDate"),
            Refusal(
                label: "cardValidationNum too long",
                body: envelope(paypage("<paypageRegistrationId>1</paypageRegistrationId><cardValidationNum>12345</cardValidationNum>")),
                code: .fieldTooLong, field: "authorization/paypage/cardValidationNum"),
            Refusal(
                label: "type not a method of payment",
                body: envelope(paypage("<paypageRegistrationId>1</paypageRegistrationId><type>ZZ</type>")),
                code: .invalidValue, field: "authorization/paypage/type"),
            Refusal(
                label: "unknown paypage child", body: envelope(paypage("<paypageRegistrationId>1</paypageRegistrationId><extra/>")),
                code: .unexpectedField, field: "authorization/paypage/extra"),
            Refusal(
                label: "paypage children out of order",
                body: envelope(paypage("<expDate>1230</expDate><paypageRegistrationId>1</paypageRegistrationId>")),
                code: .outOfOrder, field: "authorization/paypage/paypageRegistrationId"),
            Refusal(
                label: "applepay data too long", body: envelope(authorization(source: applePay(long(8193), goodHeader, "s", "EC_v1"))),
                code: .fieldTooLong, field: "authorization/applepay/data"),
            Refusal(
                label: "applepay signature too long",
                body: envelope(authorization(source: applePay("d", goodHeader, long(10_001), "EC_v1"))),
                code: .fieldTooLong, field: "authorization/applepay/signature"),
            Refusal(
                label: "applepay version too short", body: envelope(authorization(source: applePay("d", goodHeader, "s", "EC1"))),
                code: .fieldTooShort, field: "authorization/applepay/version"),
            Refusal(
                label: "applepay version too long", body: envelope(authorization(source: applePay("d", goodHeader, "s", long(11)))),
                code: .fieldTooLong, field: "authorization/applepay/version"),
            Refusal(
                label: "ephemeralPublicKey too long",
                body: envelope(authorization(source: applePay("d", header(long(401), "h", "t"), "s", "EC_v1"))),
                code: .fieldTooLong, field: "authorization/applepay/header/ephemeralPublicKey"),
            Refusal(
                label: "publicKeyHash too long",
                body: envelope(authorization(source: applePay("d", header("k", long(201), "t"), "s", "EC_v1"))),
                code: .fieldTooLong, field: "authorization/applepay/header/publicKeyHash"),
            Refusal(
                label: "transactionId too long",
                body: envelope(authorization(source: applePay("d", header("k", "h", long(251)), "s", "EC_v1"))),
                code: .fieldTooLong, field: "authorization/applepay/header/transactionId"),
            Refusal(
                label: "applicationData too long",
                body: envelope(
                    authorization(source: applePay("d", "<applicationData>\(long(10_001))</applicationData>" + goodHeader, "s", "EC_v1"))),
                code: .fieldTooLong, field: "authorization/applepay/header/applicationData"),
            Refusal(
                label: "header without publicKeyHash",
                body: envelope(
                    authorization(
                        source: applePay("d", "<ephemeralPublicKey>k</ephemeralPublicKey><transactionId>t</transactionId>", "s", "EC_v1"))),
                code: .missingField, field: "authorization/applepay/header/publicKeyHash"),
            Refusal(
                label: "applepay out of order",
                body: envelope(
                    authorization(
                        source:
                            "<applepay><data>d</data><signature>s</signature><header>\(goodHeader)</header>"
                            + "<version>EC_v1</version></applepay>"
                    )),
                code: .outOfOrder, field: "authorization/applepay/header"),
            Refusal(
                label: "registerToken with an account number",
                body: envelope(
                    "<registerTokenRequest id=\"r\" reportGroup=\"g\"><accountNumber>4111111111111111</accountNumber>"
                        + "</registerTokenRequest>"
                ),
                code: .unsupportedPaymentSource, field: "registerTokenRequest/accountNumber"),
            Refusal(
                label: "registerToken with two sources",
                body: envelope(
                    "<registerTokenRequest id=\"r\" reportGroup=\"g\"><paypageRegistrationId>1</paypageRegistrationId>"
                        + applePay("d", goodHeader, "s", "EC_v1") + "</registerTokenRequest>"),
                code: .unexpectedField, field: "registerTokenRequest/applepay"),
            Refusal(
                label: "registerToken without a source",
                body: envelope("<registerTokenRequest id=\"r\" reportGroup=\"g\"><orderId>o</orderId></registerTokenRequest>"),
                code: .missingField, field: "registerTokenRequest/paypageRegistrationId or registerTokenRequest/applepay"),
            Refusal(
                label: "registerToken orderId too long",
                body: envelope(
                    "<registerTokenRequest id=\"r\" reportGroup=\"g\"><orderId>\(long(26))</orderId>"
                        + "<paypageRegistrationId>1</paypageRegistrationId></registerTokenRequest>"
                ),
                code: .fieldTooLong, field: "registerTokenRequest/orderId"),
            Refusal(
                label: "registerToken with a foreign element",
                body: envelope(
                    "<registerTokenRequest id=\"r\" reportGroup=\"g\" xmlns:x=\"urn:x\">"
                        + "<paypageRegistrationId>1</paypageRegistrationId><x:y/></registerTokenRequest>"
                ),
                code: .unexpectedField, field: "registerTokenRequest/y"),
            Refusal(
                label: "a value with child elements", body: envelope(authorization(orderId: "<b>o</b>")),
                code: .invalidFormat, field: "authorization/orderId"),
        ]
    }()

    @Test(arguments: refusals)
    func refusesWithANamedError(_ refusal: Refusal) {
        let error = messageError { _ = try CnpOnlineRequest.parse(Array(refusal.body.utf8)) }
        #expect(error?.code == refusal.code, "\(error?.description ?? "no error")")
        #expect(error?.field == refusal.field, "\(error?.description ?? "no error")")
        #expect(error?.format == .cnpAPI)
    }

    @Test func errorsNeverCarryValues() {
        let secret = "4111111111111111"
        let body = envelope(
            "<registerTokenRequest id=\"r\" reportGroup=\"g\"><accountNumber>\(secret)</accountNumber></registerTokenRequest>")
        let error = messageError { _ = try CnpOnlineRequest.parse(Array(body.utf8)) }
        #expect(error != nil)
        #expect(!(error?.description.contains(secret) ?? true))
        let password = messageError {
            _ = try CnpOnlineRequest.parse(Array(envelope(authorization(), user: "u", password: String(repeating: "p", count: 65)).utf8))
        }
        #expect(password?.field == "authentication/password")
        #expect(!(password?.description.contains("ppppp") ?? true))
    }
}

// MARK: - Builders for request bodies

func envelope(
    _ transaction: String, dialect: CnpDialect = .cnp, version: String = "12.10", merchantId: String = "1000001",
    user: String = "u", password: String = "p"
) -> String {
    "<\(dialect.requestRootName) version=\"\(version)\" xmlns=\"\(dialect.namespaceURI)\" merchantId=\"\(merchantId)\">"
        + "<authentication><user>\(user)</user><password>\(password)</password></authentication>"
        + transaction + "</\(dialect.requestRootName)>"
}

func authorization(
    id: String = "a1", reportGroup: String = "g", customerId: String? = nil, orderId: String = "o1",
    orderSource: String = "<orderSource>ecommerce</orderSource>",
    source: String = "<paypage><paypageRegistrationId>5760311187832973287</paypageRegistrationId></paypage>",
    after: String = ""
) -> String {
    let customer = customerId.map { " customerId=\"\($0)\"" } ?? ""
    return "<authorization id=\"\(id)\" reportGroup=\"\(reportGroup)\"\(customer)><orderId>\(orderId)</orderId><amount>100</amount>"
        + orderSource + source + after + "</authorization>"
}
