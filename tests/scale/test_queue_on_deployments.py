"""SPEC section 3 queue behaviours (enqueue, take, outcomes, retries, order, dependencies,
flows, cancel, events, admin) on every scale-out deployment."""

from tests.scale.rerun import rerun_here

rerun_here(
    globals(),
    {
        "tests.queue.test_enqueue": [
            "test_enqueue_returns_a_job_with_a_string_id_and_the_stored_call",
            "test_a_job_depending_on_a_running_parent_is_deferred_with_its_options",
            "test_enqueue_at_and_enqueue_in_schedule_the_job",
            "test_a_scheduled_job_runs_when_due",
            "test_a_non_json_argument_raises_type_error_naming_it_and_writes_nothing",
            "test_empty_deletes_waiting_jobs",
        ],
        "tests.queue.test_worker_source": [
            "test_corrupt_job_data_fails_that_job_and_the_next_job_still_runs",
            "test_the_default_policy_retries_a_connection_error_after_a_jittered_delay",
            "test_retry_max_bounds_the_reruns_then_the_job_is_dead_lettered",
            "test_a_lost_child_is_a_failed_attempt_that_the_default_policy_retries",
            "test_a_worker_that_lost_its_lease_drops_its_result_with_a_warning",
            "test_renew_extends_the_leases_of_running_jobs",
            "test_tick_recovers_expired_leases_at_most_once_per_interval",
            "test_the_source_pickles_without_its_client",
            "test_a_forked_child_opens_its_own_client",
            "test_a_supervisor_registers_heartbeats_and_unregisters",
            "test_perform_with_a_next_claim_returns_the_next_job_taken_in_the_same_step",
        ],
        "tests.queue.test_results": [
            "test_get_returns_the_return_value",
            "test_get_raises_job_failed_with_type_message_and_traceback",
            "test_get_raises_timeout_error_when_the_wait_times_out",
        ],
        "tests.queue.test_order": [
            "test_higher_priority_first_then_strict_fifo_for_500_mixed_jobs",
            "test_a_job_given_back_goes_before_waiting_jobs_of_its_priority",
            "test_an_interrupted_job_goes_back_to_the_front_without_counting_an_attempt",
            "test_round_robin_strategy_takes_turns",
        ],
        "tests.queue.test_lifecycle_steps": [
            "test_a_diamond_of_dependencies_runs_in_order",
            "test_a_parent_failing_for_good_cancels_its_dependents_and_theirs",
            "test_a_flow_enqueues_each_next_stage_as_it_completes",
            "test_cancel_removes_a_waiting_job_and_cancels_its_dependents",
            "test_cancel_of_a_running_job_is_carried_out_by_the_supervisor_side",
            "test_on_failure_runs_once_after_the_last_retry",
            "test_a_jobs_life_is_in_the_event_stream_in_order",
            "test_a_requeued_dead_letter_a_handed_back_job_and_a_recovered_one_are_requeued_events",
        ],
        "tests.queue.test_admin": [
            "test_promote_runs_a_scheduled_job_now_at_the_back_of_the_queue",
            "test_queue_delete_removes_every_job_that_is_not_running",
        ],
    },
)
