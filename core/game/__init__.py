"""The game: research trees, the paper's prompt templates and the pure
engine that walks an agent through Topic -> Subtopic -> Study -> Result (paper Sec. 3, App. B-C).
Nothing here does I/O beyond reading shipped files; everything else in ``core`` plays or drives it."""
