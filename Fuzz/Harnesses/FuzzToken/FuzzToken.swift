import ApplePay
import CFuzzDriver

/// libFuzzer target `token`: a payment token as a client posts it.
@_cdecl("FuzzToken_main")
public func fuzzTokenMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    pw_fuzz_run(argc, argv) { data, size in
        let bytes = Array(UnsafeBufferPointer(start: data, count: size))
        ApplePayFuzzing.token(bytes)
        return 0
    }
}
