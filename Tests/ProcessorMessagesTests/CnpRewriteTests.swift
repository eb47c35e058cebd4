import Foundation
import Testing

@testable import ProcessorMessages

@Suite("cnpAPI request rewrite for the upstream")
struct CnpRewriteTests {
    /// `authorization`'s sequence in cnpTransaction_v12.10.xsd (with litle v10.8's billMeLaterRequest
    /// and amexAggregatorData where that schema has them), to check rewritten messages against.
    static let authorizationSequence = [
        "orderId", "amount", "secondaryAmount", "surchargeAmount", "orderSource", "customerInfo", "billToAddress", "shipToAddress",
        "card", "billMeLaterRequest", "cardholderAuthentication", "processingInstructions", "pos", "customBilling", "taxType",
        "enhancedData", "amexAggregatorData", "allowPartialAuth", "healthcareIIAS", "lodgingInfo", "filtering", "merchantData",
    ]

    /// `sale`'s sequence (same sources).
    static let saleSequence = [
        "cnpTxnId", "litleTxnId", "orderId", "amount", "secondaryAmount", "surchargeAmount", "orderSource", "customerInfo",
        "billToAddress", "shipToAddress", "card", "billMeLaterRequest", "cardholderAuthentication", "customBilling", "taxType",
        "enhancedData", "processingInstructions", "pos", "payPalOrderComplete", "payPalNotes", "amexAggregatorData",
    ]

    /// True when the known names appear in the sequence's order (unknown names are ignored).
    func inSchemaOrder(_ names: [String], _ sequence: [String]) -> Bool {
        let ranks = names.compactMap { sequence.firstIndex(of: $0) }
        return ranks == ranks.sorted()
    }

    @Test func replacesAPaypageWithCardDataAtTheSchemaPositions() throws {
        let request = try CnpOnlineRequest.parse(try Fixture.bytes("cnp-authorization-paypage.xml"))
        let card = try TestCards.applePay()
        let document = try CnpUpstreamRewriter.upstreamRequest(request, card: card)
        let ns = CnpDialect.cnp.namespaceURI
        let authorization = try #require(document.root.firstChild(named: "authorization", namespaceURI: ns))
        #expect(
            authorization.childNames == [
                "orderId", "amount", "orderSource", "billToAddress", "card", "cardholderAuthentication", "processingInstructions",
                "loyalty", "futureElement",
            ])
        #expect(inSchemaOrder(authorization.childNames, Self.authorizationSequence))
        let cardElement = try #require(authorization.firstChild(named: "card", namespaceURI: ns))
        #expect(cardElement.childNames == ["type", "number", "expDate", "cardValidationNum"])
        #expect(cardElement.childElements.map(\.text) == ["VI", TestCards.pan, "1230", "123"])
        #expect(authorization.firstChild(named: "orderSource", namespaceURI: ns)?.text == "applepay")
        let authentication = try #require(authorization.firstChild(named: "cardholderAuthentication", namespaceURI: ns))
        #expect(authentication.childElements.map(\.text) == [TestCards.cryptogram])
        let output = serialized(document)
        #expect(output.contains("<ext:loyalty tier=\"gold\">kept as is</ext:loyalty>"))
        #expect(output.contains("<futureElement>unknown to this module</futureElement>"))
        #expect(!output.contains("paypage"))
        #expect(!output.contains("5760311187832973287"))
        #expect(try CnpOnlineRequest.parse(Array(output.utf8)).merchantId == "1000001")
    }

    @Test func replacesAnApplePayTokenInTheLegacyNamespaceAfterBillMeLater() throws {
        let request = try CnpOnlineRequest.parse(try Fixture.bytes("litle-sale-applepay.xml"))
        let document = try CnpUpstreamRewriter.upstreamRequest(request, card: try TestCards.applePay())
        let sale = try #require(document.root.firstChild(named: "sale", namespaceURI: CnpDialect.litle.namespaceURI))
        #expect(
            sale.childNames == [
                "orderId", "amount", "orderSource", "card", "billMeLaterRequest", "cardholderAuthentication", "customBilling",
            ])
        #expect(inSchemaOrder(sale.childNames, Self.saleSequence))
        let output = serialized(document)
        #expect(
            output.contains(
                "<litle:card><litle:type>VI</litle:type><litle:number>\(TestCards.pan)</litle:number>"
                    + "<litle:expDate>1230</litle:expDate></litle:card>"
            ))
        #expect(
            output.contains(
                "<litle:cardholderAuthentication><litle:authenticationValue>\(TestCards.cryptogram)</litle:authenticationValue>"
                    + "</litle:cardholderAuthentication>"
            ))
        #expect(!output.contains("applepay>"))
        #expect(output.contains("<litle:orderSource>applepay</litle:orderSource>"))
    }

    @Test func putsTheCryptogramFirstInAnExistingCardholderAuthentication() throws {
        let existing =
            "<cardholderAuthentication><authenticationValue>old</authenticationValue>"
            + "<customerIpAddress>203.0.113.7</customerIpAddress></cardholderAuthentication>"
        let body = envelope(authorization(after: existing + "<pos><capability>notused</capability></pos>"))
        let document = try CnpUpstreamRewriter.upstreamRequest(try CnpOnlineRequest.parse(Array(body.utf8)), card: try TestCards.applePay())
        let authorization = try #require(document.root.firstChild(named: "authorization", namespaceURI: CnpDialect.cnp.namespaceURI))
        #expect(authorization.childNames == ["orderId", "amount", "orderSource", "card", "cardholderAuthentication", "pos"])
        let authentication = try #require(
            authorization.firstChild(named: "cardholderAuthentication", namespaceURI: CnpDialect.cnp.namespaceURI))
        #expect(authentication.childNames == ["authenticationValue", "customerIpAddress"])
        #expect(authentication.childElements.first?.text == TestCards.cryptogram)
    }

    @Test func renamesASaleFraudCheckToCardholderAuthentication() throws {
        let body = envelope(
            "<sale id=\"s\" reportGroup=\"g\"><orderId>o</orderId><amount>1</amount><orderSource>ecommerce</orderSource>"
                + "<paypage><paypageRegistrationId>1</paypageRegistrationId></paypage>"
                + "<fraudCheck><authenticatedByMerchant>true</authenticatedByMerchant></fraudCheck></sale>"
        )
        let document = try CnpUpstreamRewriter.upstreamRequest(try CnpOnlineRequest.parse(Array(body.utf8)), card: try TestCards.applePay())
        let sale = try #require(document.root.firstChild(named: "sale", namespaceURI: CnpDialect.cnp.namespaceURI))
        #expect(sale.childNames == ["orderId", "amount", "orderSource", "card", "cardholderAuthentication"])
        #expect(sale.childElements.last?.childNames == ["authenticationValue", "authenticatedByMerchant"])
    }

    @Test func insertsCardholderAuthenticationBeforeWhatFollowsItInPrettyPrintedInput() throws {
        let body = envelope(authorization(after: "\n  <processingInstructions/>\n  <customBilling/>\n"))
        let document = try CnpUpstreamRewriter.upstreamRequest(try CnpOnlineRequest.parse(Array(body.utf8)), card: try TestCards.applePay())
        let names = document.root.childElements.last?.childNames ?? []
        #expect(
            names == ["orderId", "amount", "orderSource", "card", "cardholderAuthentication", "processingInstructions", "customBilling"])
    }

    @Test func sendsNoCardholderAuthenticationWithoutACryptogram() throws {
        let stored = try ForwardedCardData(accountNumber: TestCards.pan, expirationYYMMDD: "301231")
        let request = try CnpOnlineRequest.parse(try Fixture.bytes("cnp-authorization-paypage.xml"))
        let document = try CnpUpstreamRewriter.upstreamRequest(request, card: stored)
        let names = document.root.firstChild(named: "authorization", namespaceURI: CnpDialect.cnp.namespaceURI)?.childNames ?? []
        #expect(!names.contains("cardholderAuthentication"))
    }

    @Test func replacesAStoredTokenWithItsCardKeepingTheOrderSourceAndAddingNoCryptogram() throws {
        let stored = try ForwardedCardData(accountNumber: TestCards.pan, expirationYYMMDD: "301231")
        let source = "<token><cnpToken>4761730000040017</cnpToken><expDate>0199</expDate><cardValidationNum>321</cardValidationNum></token>"
        let request = try CnpOnlineRequest.parse(
            Array(
                envelope(
                    authorization(
                        orderSource: "<orderSource>recurring</orderSource>", source: source,
                        after: "<processingType>merchantInitiatedCOF</processingType>")
                ).utf8))
        let account = CnpUpstreamRewriter.UpstreamAccount(user: "UPSTREAM", password: "upstream-pass")
        let document = try CnpUpstreamRewriter.storedCardRequest(request, card: stored, account: account)
        let ns = CnpDialect.cnp.namespaceURI
        let authorization = try #require(document.root.firstChild(named: "authorization", namespaceURI: ns))
        #expect(authorization.childNames == ["orderId", "amount", "orderSource", "card", "processingType"])
        #expect(authorization.firstChild(named: "orderSource", namespaceURI: ns)?.text == "recurring")
        let card = try #require(authorization.firstChild(named: "card", namespaceURI: ns))
        // The vault's expiry, not the client's copy on the token; the token's CVV moves into the card.
        #expect(card.childElements.map(\.text) == ["VI", TestCards.pan, "1230", "321"])
        #expect(!serialized(document).contains("4761730000040017") && serialized(document).contains("<user>UPSTREAM</user>"))
        // A card with a cryptogram is not a stored token's; a request without a token has nothing to replace.
        #expect(
            messageError { _ = try CnpUpstreamRewriter.storedCardRequest(request, card: try TestCards.applePay()) }?.code
                == .invalidCardData)
        let paypage = try CnpOnlineRequest.parse(try Fixture.bytes("cnp-authorization-paypage.xml"))
        #expect(messageError { _ = try CnpUpstreamRewriter.storedCardRequest(paypage, card: stored) }?.code == .unsupportedPaymentSource)
    }

    @Test func substitutesTheUpstreamAccount() throws {
        let request = try CnpOnlineRequest.parse(try Fixture.bytes("cnp-authorization-paypage.xml"))
        let account = CnpUpstreamRewriter.UpstreamAccount(merchantId: "9000009", user: "UPSTREAM", password: "upstream-pass")
        let rewritten = try CnpOnlineRequest.parse(
            ProcessorXML.serialize(try CnpUpstreamRewriter.upstreamRequest(request, card: try TestCards.applePay(), account: account)))
        #expect(rewritten.merchantId == "9000009")
        #expect(rewritten.user == "UPSTREAM" && rewritten.password == "upstream-pass")
    }

    @Test func passesThroughWhatNeedsNoCardDataButNeverAPaypageOrApplePay() throws {
        let account = CnpUpstreamRewriter.UpstreamAccount(user: "UPSTREAM", password: "upstream-pass")
        let withCard = envelope(authorization(source: "<card><type>VI</type><number>4111111111111111</number></card>"))
        let cardRequest = try CnpOnlineRequest.parse(Array(withCard.utf8))
        let passed = try CnpOnlineRequest.parse(
            ProcessorXML.serialize(try CnpUpstreamRewriter.passthroughRequest(cardRequest, account: account)))
        #expect(passed.user == "UPSTREAM" && passed.password == "upstream-pass" && passed.merchantId == cardRequest.merchantId)
        #expect(serialized(passed.document).contains("<number>4111111111111111</number>"))
        for fixture in ["cnp-authorization-paypage.xml", "litle-sale-applepay.xml", "cnp-register-token-applepay.xml"] {
            let request = try CnpOnlineRequest.parse(try Fixture.bytes(fixture))
            let code = messageError { _ = try CnpUpstreamRewriter.passthroughRequest(request, account: account) }?.code
            #expect(code == .unsupportedPaymentSource || code == .unsupportedTransaction, "\(fixture)")
        }
    }

    @Test func refusesWhatItCannotRewrite() throws {
        let registration = try CnpOnlineRequest.parse(try Fixture.bytes("cnp-register-token-applepay.xml"))
        #expect(
            messageError { _ = try CnpUpstreamRewriter.upstreamRequest(registration, card: try TestCards.applePay()) }?.code
                == .unsupportedTransaction)
        let withCard = envelope(authorization(source: "<card><type>VI</type><number>4111111111111111</number></card>"))
        let cardRequest = try CnpOnlineRequest.parse(Array(withCard.utf8))
        #expect(
            messageError { _ = try CnpUpstreamRewriter.upstreamRequest(cardRequest, card: try TestCards.applePay()) }?.code
                == .unsupportedPaymentSource)
        let unknownNetwork = try ForwardedCardData(accountNumber: "9999999999999995", expirationYYMMDD: "301231")
        let applePayBody = try CnpOnlineRequest.parse(try Fixture.bytes("litle-sale-applepay.xml"))
        let error = messageError { _ = try CnpUpstreamRewriter.upstreamRequest(applePayBody, card: unknownNetwork) }
        #expect(error?.code == .invalidCardData && error?.field == "card/type")
        // A paypage's own type stands in when the BIN names no network.
        let paypage = try CnpOnlineRequest.parse(try Fixture.bytes("cnp-authorization-paypage.xml"))
        let document = try CnpUpstreamRewriter.upstreamRequest(paypage, card: unknownNetwork)
        #expect(serialized(document).contains("<type>VI</type><number>9999999999999995</number>"))
    }
}
