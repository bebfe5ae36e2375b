/* Series names the core's metric registry refuses: tests/unit/core/
 * metrics_test.c checks the core with them, tests/unit/pdk/
 * mock_metrics_test.c the kit's mock host. */
#ifndef TLSBOX_TESTS_METRICS_BAD_NAMES_H
#define TLSBOX_TESTS_METRICS_BAD_NAMES_H

static const char *const metrics_bad_names[] = {"",
                                                "1abc",
                                                "a-b",
                                                "a b",
                                                "a{",
                                                "a{}",
                                                "a{b}",
                                                "a{b=\"c\"",
                                                "a{b=\"c\",}",
                                                "a{b=\"c\"}x",
                                                "a{__b=\"c\"}",
                                                "a{b=\"c\\x\"}",
                                                "a{b=c}",
                                                "a{1b=\"c\"}",
                                                "a{b:c=\"d\"}",
                                                "{b=\"c\"}",
                                                "a{b=\"c\"}{d=\"e\"}"};
#define METRICS_BAD_NAMES (sizeof(metrics_bad_names) / sizeof(metrics_bad_names[0]))

#endif
