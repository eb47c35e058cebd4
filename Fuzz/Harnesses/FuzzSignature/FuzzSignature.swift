import ApplePay
import CFuzzDriver

/// libFuzzer target `signature`: a token's detached BER CMS signature.
@_cdecl("FuzzSignature_main")
public func fuzzSignatureMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    pw_fuzz_run(argc, argv) { data, size in
        let bytes = Array(UnsafeBufferPointer(start: data, count: size))
        ApplePayFuzzing.signature(bytes)
        return 0
    }
}
