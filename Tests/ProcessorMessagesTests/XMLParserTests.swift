import Foundation
import Testing

@testable import ProcessorMessages

@Suite("ProcessorXML parsing")
struct XMLParserTests {
    private func code(_ text: String, limits: ProcessorXML.Limits = .default) -> ProcessorXMLError.Code? {
        do {
            _ = try ProcessorXML.parse(text, limits: limits)
            return nil
        } catch {
            return error.code
        }
    }

    @Test func parsesNamespacesPrefixesAndAttributes() throws {
        let text = """
            <?xml version="1.0" encoding="UTF-8"?>
            <a:root xmlns:a="urn:a" xmlns="urn:default" b:flag="1" plain="x" xmlns:b="urn:b">
              <child>t&amp;t &#x41;&#66;</child><a:other/><![CDATA[<raw>]]><!-- note -->
            </a:root>
            """
        let document = try ProcessorXML.parse(text)
        #expect(document.declaration?.encoding == "UTF-8")
        let root = document.root
        #expect(root.name == .init(namespaceURI: "urn:a", prefix: "a", localName: "root"))
        #expect(root.attribute("flag", namespaceURI: "urn:b") == "1")
        #expect(root.attribute("plain") == "x")
        #expect(root.namespaceDeclarations.count == 3)
        let child = try #require(root.firstChild(named: "child", namespaceURI: "urn:default"))
        #expect(child.text == "t&t AB")
        #expect(root.firstChild(named: "other", namespaceURI: "urn:a") != nil)
        #expect(root.children.contains(.cdata("<raw>")))
        #expect(root.children.contains(.comment(" note ")))
    }

    @Test func normalizesLineEndsAndAttributeWhitespace() throws {
        let root = try ProcessorXML.parse("<r a=\"x\ty\r\nz\">1\r\n2\r3</r>").root
        #expect(root.attribute("a") == "x y z")
        #expect(root.text == "1\n2\n3")
    }

    @Test func refusesDoctypeEvenWithoutEntities() {
        #expect(code("<!DOCTYPE r><r/>") == .doctypeForbidden)
        #expect(code("<?xml version=\"1.0\"?>\n<!DOCTYPE r SYSTEM \"http://example.com/r.dtd\"><r/>") == .doctypeForbidden)
    }

    @Test func refusesBillionLaughs() {
        var text = "<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [\n<!ENTITY lol \"lol\">\n"
        for level in 1...9 {
            text += "<!ENTITY lol\(level) \"" + String(repeating: "&lol\(level - 1 == 0 ? "" : String(level - 1));", count: 10) + "\">\n"
        }
        text += "]>\n<lolz>&lol9;</lolz>"
        #expect(code(text) == .doctypeForbidden)
        // The same reference without the DTD is an undeclared entity, refused on its own.
        #expect(code("<lolz>&lol9;</lolz>") == .entityForbidden)
    }

    @Test func refusesExternalEntities() {
        let xxe = """
            <?xml version="1.0"?><!DOCTYPE r [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><r>&xxe;</r>
            """
        #expect(code(xxe) == .doctypeForbidden)
        #expect(code("<r>&xxe;</r>") == .entityForbidden)
        #expect(code("<r a=\"&xxe;\"/>") == .entityForbidden)
        #expect(code("<r><!ENTITY x \"y\"></r>") == .entityForbidden)
    }

    @Test func refusesProcessingInstructions() {
        #expect(code("<?xml-stylesheet href=\"a\"?><r/>") == .processingInstructionForbidden)
        #expect(code("<r><?php echo 1 ?></r>") == .processingInstructionForbidden)
        #expect(code("<r/><?xml version=\"1.0\"?>") == .processingInstructionForbidden)
        #expect(code(" <?xml version=\"1.0\"?><r/>") == .processingInstructionForbidden)
    }

    @Test func deepNestingFailsFastWithoutRecursion() {
        let depth = 10_000
        let text = String(repeating: "<a>", count: depth) + String(repeating: "</a>", count: depth)
        let limits = ProcessorXML.Limits(maximumBytes: 1 << 20)
        let clock = ContinuousClock()
        let elapsed = clock.measure { #expect(code(text, limits: limits) == .depthLimitExceeded) }
        #expect(elapsed < .seconds(1))
        #expect(code(String(repeating: "<a>", count: 32) + String(repeating: "</a>", count: 32)) == nil)
        #expect(code(String(repeating: "<a>", count: 33) + String(repeating: "</a>", count: 33)) == .depthLimitExceeded)
    }

    @Test func enforcesSizeAndTextLimits() {
        let megabyte = "<r>" + String(repeating: "x", count: 1 << 20) + "</r>"
        #expect(code(megabyte) == .inputTooLarge)
        let roomy = ProcessorXML.Limits(maximumBytes: 2 << 20)
        #expect(code(megabyte, limits: roomy) == .textLimitExceeded)
        #expect(code("<r a=\"" + String(repeating: "y", count: 17_000) + "\"/>") == .textLimitExceeded)
        #expect(code("<r><!--" + String(repeating: "c", count: 17_000) + "--></r>") == .textLimitExceeded)
        #expect(code("<r><![CDATA[" + String(repeating: "c", count: 17_000) + "]]></r>") == .textLimitExceeded)
        #expect(code("<r>" + String(repeating: "z", count: 16 * 1024) + "</r>") == nil)
    }

    @Test func enforcesElementAndAttributeLimits() {
        let many = "<r>" + String(repeating: "<e/>", count: 100_000) + "</r>"
        #expect(code(many) == .inputTooLarge)
        #expect(code(many, limits: .init(maximumBytes: 1 << 20)) == .elementLimitExceeded)
        #expect(code("<r>" + String(repeating: "<e/>", count: 1_999) + "</r>") == nil)
        let attributes = (0..<300).map { "a\($0)=\"v\"" }.joined(separator: " ")
        #expect(code("<r \(attributes)/>") == .attributeLimitExceeded)
        let declarations = (0..<300).map { "xmlns:p\($0)=\"urn:\($0)\"" }.joined(separator: " ")
        #expect(code("<r \(declarations)/>") == .attributeLimitExceeded)
    }

    @Test func refusesMalformedDocuments() {
        #expect(code("<r>") == .unexpectedEndOfInput)
        #expect(code("<r><a></r>") == .mismatchedEndTag)
        #expect(code("<r a=\"1\" a=\"2\"/>") == .duplicateAttribute)
        #expect(code("<r xmlns:p=\"urn:x\" xmlns:q=\"urn:x\" p:a=\"1\" q:a=\"2\"/>") == .duplicateAttribute)
        #expect(code("<p:r/>") == .undeclaredNamespacePrefix)
        #expect(code("<r p:a=\"1\"/>") == .undeclaredNamespacePrefix)
        #expect(code("<r xmlns:p=\"\"/>") == .invalidNamespaceDeclaration)
        #expect(code("<r xmlns:xmlns=\"urn:x\"/>") == .invalidNamespaceDeclaration)
        #expect(code("") == .missingRootElement)
        #expect(code("<r/><s/>") == .contentAfterRootElement)
        #expect(code("<r/>text") == .contentAfterRootElement)
        #expect(code("text<r/>") == .malformed)
        #expect(code("<r>]]></r>") == .malformed)
        #expect(code("<r a=b/>") == .malformed)
        #expect(code("<r a=\"1\"b=\"2\"/>") == .malformed)
        #expect(code("<r>&amp</r>") == .malformed)
        #expect(code("<r>&#0;</r>") == .invalidCharacterReference)
        #expect(code("<r>&#xD800;</r>") == .invalidCharacterReference)
        #expect(code("<r>&#99999999999;</r>") == .invalidCharacterReference)
        #expect(code("<1r/>") == .invalidName)
        #expect(code("<r:/>") == .invalidName)
        #expect(code("<r><!-- a -- b --></r>") == .malformed)
        #expect(code("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><r/>") == .unsupportedEncoding)
        #expect(code("<?xml version=\"2.0\"?><r/>") == .malformed)
    }

    @Test func refusesInvalidUTF8AndControlCharacters() throws {
        let cases: [[UInt8]] = [
            [0x3C, 0x72, 0x3E, 0xC3, 0x28, 0x3C, 0x2F, 0x72, 0x3E],  // truncated sequence
            [0x3C, 0x72, 0x3E, 0xC0, 0xAF, 0x3C, 0x2F, 0x72, 0x3E],  // overlong '/'
            [0x3C, 0x72, 0x3E, 0xED, 0xA0, 0x80, 0x3C, 0x2F, 0x72, 0x3E],  // encoded surrogate
            [0x3C, 0x72, 0x3E, 0xFF, 0x3C, 0x2F, 0x72, 0x3E],
        ]
        for bytes in cases {
            #expect(throws: ProcessorXMLError.self) { try ProcessorXML.parse(bytes) }
            do { _ = try ProcessorXML.parse(bytes) } catch { #expect(error.code == .invalidUTF8) }
        }
        do { _ = try ProcessorXML.parse([0x3C, 0x72, 0x3E, 0x01, 0x3C, 0x2F, 0x72, 0x3E]) } catch {
            #expect(error.code == .invalidCharacter)
        }
        do { _ = try ProcessorXML.parse([0xFF, 0xFE, 0x3C, 0x00]) } catch { #expect(error.code == .unsupportedEncoding) }
        let withBOM: [UInt8] = [0xEF, 0xBB, 0xBF] + Array("<r>é</r>".utf8)
        #expect(try ProcessorXML.parse(withBOM).root.text == "é")
    }

    @Test func errorMessagesQuoteOnlyShortSanitizedNames() {
        let secret = "4111111111111111"
        let long = "a" + String(repeating: "b", count: 200)
        do {
            _ = try ProcessorXML.parse("<r><\(long)>\(secret)</r>")
            Issue.record("expected a mismatch")
        } catch {
            #expect(error.code == .mismatchedEndTag)
            #expect(!error.message.contains(secret))
            #expect(error.message.count < 120)
        }
        do {
            _ = try ProcessorXML.parse("<r>&\(secret);</r>")
        } catch {
            #expect(error.code == .malformed || error.code == .entityForbidden)
        }
    }
}
