import ApplePay
import CFuzzDriver
import ProcessorMessages

/// libFuzzer target `eprotect`: a paypage registration form, then the token it assembles.
@_cdecl("FuzzEProtect_main")
public func fuzzEProtectMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    pw_fuzz_run(argc, argv) { data, size in
        let bytes = Array(UnsafeBufferPointer(start: data, count: size))
        if let token = ProcessorMessagesFuzzing.eProtectForm(bytes) { ApplePayFuzzing.token(token) }
        return 0
    }
}
