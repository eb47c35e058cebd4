import Foundation
import Testing

@testable import ProcessorMessages

@Suite("cnpAPI responses")
struct CnpResponseTests {
    let responseTime = Date(timeIntervalSince1970: 1_714_000_000)  // 2024-04-24T23:06:40Z

    @Test func buildsARegisterTokenResponseInTheSchemaOrder() throws {
        let applePay = CnpApplePayResponse(
            applicationExpirationDate: "301231", currencyCode: "840", transactionAmount: "1500", cardholderName: "Jane Doe",
            deviceManufacturerIdentifier: "040010030273", paymentDataType: "3DSecure", onlinePaymentCryptogram: TestCards.cryptogram,
            eciIndicator: "07")
        let response = CnpRegisterTokenResponse(
            attributes: .init(id: "reg-0003", reportGroup: "Mobile App", customerId: "cust-42"), transactionId: 82_820_000_000_001,
            response: .registered, responseTime: responseTime, token: "4761730000100018", bin: "476173", type: "VI", applePay: applePay)
        for dialect in CnpDialect.allCases {
            let element = response.element(dialect)
            #expect(
                element.childNames == [
                    dialect.transactionIdName, dialect.tokenName, "bin", "type", "response", "message", "responseTime", "applepayResponse",
                ])
            #expect(
                element.attribute("id") == "reg-0003" && element.attribute("reportGroup") == "Mobile App"
                    && element.attribute("customerId") == "cust-42")
            #expect(element.firstChild(named: "responseTime", namespaceURI: dialect.namespaceURI)?.text == "2024-04-24T23:06:40")
            #expect(
                element.firstChild(named: "message", namespaceURI: dialect.namespaceURI)?.text
                    == "Account number was successfully registered")
            let apple = try #require(element.firstChild(named: "applepayResponse", namespaceURI: dialect.namespaceURI))
            #expect(
                apple.childNames == [
                    "applicationExpirationDate", "currencyCode", "transactionAmount", "cardholderName", "deviceManufacturerIdentifier",
                    "paymentDataType", "onlinePaymentCryptogram", "eciIndicator",
                ])
        }
        #expect(!applePay.description.contains(TestCards.cryptogram))
    }

    @Test func wrapsResponsesInAValidFormatEnvelopeEchoingTheVersion() throws {
        let element = CnpRegisterTokenResponse(
            attributes: .init(id: "r", reportGroup: "g"), transactionId: 1, response: .previouslyRegistered, responseTime: responseTime
        ).element(.litle)
        let document = CnpOnlineResponse.envelope(dialect: .litle, version: "10.3", transactions: [element])
        let reparsed = try ProcessorXML.parse(ProcessorXML.serialize(document)).root
        #expect(reparsed.name.matches("litleOnlineResponse", namespaceURI: CnpDialect.litle.namespaceURI))
        #expect(
            reparsed.attribute("version") == "10.3" && reparsed.attribute("response") == "0"
                && reparsed.attribute("message") == "Valid Format")
        #expect(reparsed.childNames == ["registerTokenResponse"])
        #expect(reparsed.childElements.first?.firstChild(named: "response", namespaceURI: CnpDialect.litle.namespaceURI)?.text == "802")
    }

    @Test func answersRefusedRequestsWithTheServiceErrorEnvelope() throws {
        let invalid = messageError {
            _ = try CnpOnlineRequest.parse(Array(envelope(authorization(orderId: String(repeating: "x", count: 26))).utf8))
        }
        let validation = CnpOnlineResponse.errorEnvelope(dialect: .cnp, version: "12.10", refusing: try #require(invalid)).root
        #expect(validation.attribute("response") == "1")
        #expect(validation.attribute("message")?.hasPrefix("Error validating xml data against the schema: ") == true)
        #expect(validation.childElements.isEmpty)
        let doctype = messageError { _ = try CnpOnlineRequest.parse(Array("<!DOCTYPE x><x/>".utf8)) }
        #expect(
            CnpOnlineResponse.errorEnvelope(dialect: .cnp, version: "12.10", refusing: try #require(doctype)).root.attribute("response")
                == "5")
        let garbage = messageError { _ = try CnpOnlineRequest.parse(Array("not xml".utf8)) }
        let notXML = CnpOnlineResponse.errorEnvelope(dialect: .cnp, version: "12.10", refusing: try #require(garbage)).root
        #expect(notXML.attribute("response") == "2" && notXML.attribute("message") == "System Error - Call Vantiv.")
        #expect(CnpEnvelopeStatus.invalidCredentials.response == "3")
    }

    @Test func insertsTheTokenResponseInAnAuthorizationResponseAndMasksTheAccount() throws {
        let token = CnpResponseRewriter.TokenResult(token: "4761730000100018", code: .registered, type: "VI", bin: "476173")
        let document = try CnpResponseRewriter.clientResponse(
            try Fixture.bytes("cnp-authorization-response.xml"), token: token, forwarded: try TestCards.applePay())
        let ns = CnpDialect.cnp.namespaceURI
        let response = try #require(document.root.firstChild(named: "authorizationResponse", namespaceURI: ns))
        #expect(
            response.childNames == [
                "cnpTxnId", "orderId", "response", "responseTime", "message", "authCode", "accountInformation", "fraudResult",
                "tokenResponse", "enhancedAuthResponse", "networkTransactionId",
            ])
        let tokenResponse = try #require(response.firstChild(named: "tokenResponse", namespaceURI: ns))
        #expect(tokenResponse.childNames == ["cnpToken", "tokenResponseCode", "tokenMessage", "type", "bin"])
        #expect(
            tokenResponse.childElements.map(\.text) == [
                "4761730000100018", "801", "Account number was successfully registered", "VI", "476173",
            ])
        let output = serialized(document)
        #expect(!output.contains(TestCards.pan))
        #expect(output.contains("<number>476173******0010</number>"))
        #expect(output.contains("<networkTransactionId>123456789012345</networkTransactionId>"))
    }

    @Test func insertsLitleTokenBeforeAccountUpdaterInASaleResponseAndMasksEveryCardNumber() throws {
        let token = CnpResponseRewriter.TokenResult(token: "4761730000100018", code: .previouslyRegistered)
        let document = try CnpResponseRewriter.clientResponse(try Fixture.bytes("litle-sale-response.xml"), token: token, forwarded: nil)
        let ns = CnpDialect.litle.namespaceURI
        let response = try #require(document.root.firstChild(named: "saleResponse", namespaceURI: ns))
        #expect(
            response.childNames == [
                "litleTxnId", "response", "orderId", "responseTime", "message", "fraudResult", "tokenResponse", "accountUpdater",
            ])
        #expect(
            response.firstChild(named: "tokenResponse", namespaceURI: ns)?.childNames == [
                "litleToken", "tokenResponseCode", "tokenMessage",
            ])
        let output = serialized(document)
        #expect(!output.contains("4761739001010010") && !output.contains("4761739001010028"))
        #expect(output.contains("476173******0010") && output.contains("476173******0028"))
    }

    @Test func replacesAnUpstreamTokenResponseAndRemovesEchoedCryptograms() throws {
        let body = """
            <cnpOnlineResponse version="12.10" xmlns="http://www.vantivcnp.com/schema" response="0" message="Valid Format">
            <saleResponse id="s" reportGroup="g"><cnpTxnId>1</cnpTxnId><response>000</response><orderId>o</orderId>
            <responseTime>2024-01-01T00:00:00</responseTime><message>Approved</message>
            <tokenResponse><cnpToken>1111000276870123</cnpToken><tokenResponseCode>801</tokenResponseCode>\
            <tokenMessage>x</tokenMessage></tokenResponse>
            <applepayResponse><applicationPrimaryAccountNumber>\(TestCards.pan)</applicationPrimaryAccountNumber>
            <onlinePaymentCryptogram>\(TestCards.cryptogram)</onlinePaymentCryptogram></applepayResponse>
            <message2 note="\(TestCards.pan)">see \(TestCards.cryptogram)</message2></saleResponse></cnpOnlineResponse>
            """
        let token = CnpResponseRewriter.TokenResult(token: "4761730000100018", code: .registered)
        let document = try CnpResponseRewriter.clientResponse(Array(body.utf8), token: token, forwarded: try TestCards.applePay())
        let response = try #require(document.root.childElements.first)
        #expect(response.children(named: "tokenResponse", namespaceURI: CnpDialect.cnp.namespaceURI).count == 1)
        let output = serialized(document)
        #expect(output.contains("<cnpToken>4761730000100018</cnpToken>") && !output.contains("1111000276870123"))
        #expect(!output.contains(TestCards.pan) && !output.contains(TestCards.cryptogram))
        #expect(!output.contains("onlinePaymentCryptogram"))
    }

    @Test func refusesAnUpstreamBodyThatIsNotAnOnlineResponse() {
        let error = messageError { _ = try CnpResponseRewriter.clientResponse(Array("<other/>".utf8), token: nil, forwarded: nil) }
        #expect(error?.code == .unexpectedRoot)
    }

    @Test(arguments: CnpLocalDecline.allCases)
    func declinesLocallyWithoutTheUpstream(_ decline: CnpLocalDecline) throws {
        let request = try CnpOnlineRequest.parse(try Fixture.bytes("cnp-authorization-paypage.xml"))
        let document = try decline.response(to: request, transactionId: 42, responseTime: responseTime)
        #expect(document.root.attribute("response") == "0" && document.root.attribute("version") == "12.10")
        let response = try #require(document.root.firstChild(named: "authorizationResponse", namespaceURI: CnpDialect.cnp.namespaceURI))
        #expect(response.attribute("id") == "auth-0001" && response.attribute("customerId") == "cust-42")
        #expect(response.childNames == ["cnpTxnId", "orderId", "response", "responseTime", "message"])
        #expect(response.childElements.map(\.text) == ["42", "order-0001", decline.rawValue, "2024-04-24T23:06:40", decline.message])

        let sale = try CnpOnlineRequest.parse(try Fixture.bytes("litle-sale-applepay.xml"))
        let saleResponse = try decline.response(to: sale, transactionId: 43, responseTime: responseTime).root.childElements.first
        #expect(saleResponse?.name.localName == "saleResponse")
        #expect(saleResponse?.childNames == ["litleTxnId", "response", "orderId", "responseTime", "message"])
    }

    @Test func declineMessagesAreWorldpays() {
        #expect(CnpLocalDecline.invalidRegistrationId.message == "Invalid Paypage Registration Id")
        #expect(CnpLocalDecline.expiredRegistrationId.message == "Expired Paypage Registration Id")
    }
}
