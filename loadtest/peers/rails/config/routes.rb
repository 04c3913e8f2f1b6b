Rails.application.routes.draw do
  # POST /post {"body": "...", "id": N}: broadcast it to every EventsChannel subscriber.
  post "/post", to: "posts#create"
  get "/up", to: "posts#up"
end
