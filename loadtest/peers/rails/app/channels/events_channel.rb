# Every subscriber gets every post, in the shape agora's EventsChannel frames have, so the load
# generator reads both alike.
class EventsChannel < ApplicationCable::Channel
  def subscribed
    stream_from "events"
  end
end
