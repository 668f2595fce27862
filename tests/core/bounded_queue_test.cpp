#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "core/bounded_queue.h"

using talkbox::BoundedQueue;

TEST(BoundedQueue, DeliversInOrderAcrossThreadsWithBackPressure) {
    BoundedQueue<int> q(2);
    std::atomic<size_t> max_seen{0};
    std::thread producer([&] {
        for (int i = 0; i < 1000; ++i) {
            ASSERT_TRUE(q.push(i));
            max_seen = std::max(max_seen.load(), q.size());
        }
        q.close();
    });
    std::vector<int> got;
    while (auto v = q.pop()) got.push_back(*v);
    producer.join();
    ASSERT_EQ(got.size(), 1000u);
    for (int i = 0; i < 1000; ++i) ASSERT_EQ(got[i], i);
    EXPECT_LE(max_seen.load(), 2u);
}

TEST(BoundedQueue, CloseLetsTheConsumerDrain) {
    BoundedQueue<int> q(4);
    q.push(1);
    q.push(2);
    q.close();
    EXPECT_FALSE(q.push(3));
    EXPECT_EQ(q.pop(), 1);
    EXPECT_EQ(q.pop(), 2);
    EXPECT_EQ(q.pop(), std::nullopt);
}

TEST(BoundedQueue, CancelWakesABlockedProducerAndDropsItems) {
    BoundedQueue<int> q(1);
    q.push(1);
    std::atomic<bool> returned{false};
    std::thread producer([&] {
        EXPECT_FALSE(q.push(2));  // blocks: full
        returned = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(returned);
    q.cancel();
    producer.join();
    EXPECT_TRUE(returned);
    EXPECT_EQ(q.pop(), std::nullopt);
    EXPECT_TRUE(q.cancelled());
}

TEST(BoundedQueue, CancelWakesABlockedConsumer) {
    BoundedQueue<int> q(1);
    std::thread consumer([&] { EXPECT_EQ(q.pop(), std::nullopt); });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    q.cancel();
    consumer.join();
}
