import Testing

@testable import PaywardenServer
@testable import PaywardenServices

/// A fault the maintenance loop hears of late (the request that saw it timed out after a health
/// check had already begun) must not take a recovered HSM out of service; one seen after the
/// last passing check must.
@Suite struct HSMHealthRecordTests {
    @Test func aFaultIsAnsweredOnlyByACheckThatBeganAfterIt() {
        let record = HSMHealthRecord()
        let origin = ContinuousClock.now
        let fault = HSMFault(reason: "the HSM did not answer", at: origin + .milliseconds(100))
        #expect(!record.isAnswered(fault), "no check has passed yet")

        record.checkPassed(startedAt: origin)
        #expect(!record.isAnswered(fault), "the check began before the failure was seen")

        record.checkPassed(startedAt: origin + .milliseconds(200))
        #expect(record.isAnswered(fault), "a check that began after the failure has passed")
        #expect(!record.isAnswered(HSMFault(reason: "later", at: origin + .milliseconds(300))))
    }

    @Test func aSlowCheckFinishingLastDoesNotMoveTheRecordBack() {
        let record = HSMHealthRecord()
        let origin = ContinuousClock.now
        record.checkPassed(startedAt: origin + .seconds(2))
        record.checkPassed(startedAt: origin)  // began earlier, finished later
        #expect(record.isAnswered(HSMFault(reason: "between", at: origin + .seconds(1))))
    }
}
