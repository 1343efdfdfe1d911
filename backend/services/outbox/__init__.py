"""The transactional outbox: task messages written as rows in the transaction they announce."""
