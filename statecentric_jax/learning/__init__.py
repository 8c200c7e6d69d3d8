"""Transition models (LSTM, XGBoost) that predict the next state's embedding, and their training."""
