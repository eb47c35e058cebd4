import CFuzzDriver
import ProcessorMessages

/// libFuzzer target `processor-xml`: the XML parser and every processor codec and rewriter.
@_cdecl("FuzzProcessorXML_main")
public func fuzzProcessorXMLMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    pw_fuzz_run(argc, argv) { data, size in
        let bytes = Array(UnsafeBufferPointer(start: data, count: size))
        ProcessorMessagesFuzzing.run(bytes)
        return 0
    }
}
